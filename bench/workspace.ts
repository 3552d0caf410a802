import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { forEachLimited } from "../src/core/bounded-concurrency.js";
import { ShadowGit } from "./git.js";

/** A generated project: `files` are workspace-relative paths, `/`-separated, in creation order. */
export interface Workspace {
  root: string;
  files: string[];
  /** A ~4 KB file at the same depth whatever the size, so depth does not masquerade as size. */
  hotFile: string;
}

const FILES_PER_FOLDER = 20;
export const HOT_FILE = "packages/pkg-0/src/mod-0/part-0/hot.ts";

/**
 * Writes `fileCount` small source-like files (200 B - 2 KB, ~1.1 KB on average) in folders of
 * 20, four levels deep (`packages/pkg-N/src/mod-N/part-N/`), like a mid-sized monorepo, plus the
 * hot file. Deterministic: the same count gives the same bytes, so every contender sees one tree.
 */
export async function makeWorkspace(root: string, fileCount: number): Promise<Workspace> {
  const files = Array.from({ length: fileCount }, (_, i) => pathOfFile(i));
  const folders = new Set(files.map((file) => dirname(file)));
  folders.add(dirname(HOT_FILE));
  for (const folder of folders) await mkdir(join(root, folder), { recursive: true });
  await forEachLimited(
    files.map((file, i) => ({ file, i })),
    32,
    ({ file, i }) => writeFile(join(root, file), sourceText(i, 200 + ((i * 7919) % 1800))),
  );
  await writeFile(join(root, HOT_FILE), hotFileText(0));
  return { root, files, hotFile: HOT_FILE };
}

function pathOfFile(i: number): string {
  const leaf = Math.floor(i / FILES_PER_FOLDER);
  return `packages/pkg-${Math.floor(leaf / 100)}/src/mod-${Math.floor(leaf / 10) % 10}/part-${leaf % 10}/file-${i}.ts`;
}

/** TypeScript-looking text of exactly `bytes` ASCII bytes, different for every `seed`. */
export function sourceText(seed: number, bytes: number): string {
  let text = `// generated module ${seed}\nimport { helper${seed % 97} } from "./helpers.js";\n\n`;
  for (let fn = 0; text.length < bytes; fn++) {
    text +=
      `export function step${seed}_${fn}(input: number[]): number {\n` +
      `  let total = ${(seed * 31 + fn) % 1000};\n` +
      `  for (const value of input) total += helper${seed % 97}(value) * ${fn + 1};\n` +
      `  return total;\n}\n\n`;
  }
  return text.slice(0, bytes);
}

/** The hot file's bytes after edit number `version`: 4 KB, new bytes (a new blob) for each version. */
export function hotFileText(version: number): string {
  return sourceText(1_000_000 + version, 4096);
}

/** What an edit tool makes of a generated file: a line appended. */
export function editedText(original: string, version: number): string {
  return `${original}// edited by the agent, version ${version}\n`;
}

/** `count` of `files`, spread evenly over the tree rather than bunched in one folder. */
export function spreadPick(files: readonly string[], count: number): string[] {
  if (count > files.length) throw new Error(`cannot pick ${count} of ${files.length} files`);
  const step = files.length / count;
  return Array.from({ length: count }, (_, i) => files[Math.floor(i * step)]!);
}

export function absolute(workspace: Workspace, file: string): string {
  return join(workspace.root, file);
}

/** 1000 -> "1k", 300 -> "300": how sizes read in the table. */
export function sizeLabel(files: number): string {
  return files >= 1000 && files % 1000 === 0 ? `${files / 1000}k` : String(files);
}

/** A workspace with its shadow git repository, whose first commit is the generated tree. */
export interface GitWorkspace {
  workspace: Workspace;
  git: ShadowGit;
  initialCommit: string;
}

const shared = new Map<number, Promise<GitWorkspace>>();
let sharedRoot: string | undefined;

/**
 * One workspace + shadow git per size for the whole run, shared by the capture and rewind
 * suites: making a 50k-file tree and its first commit takes 10-60 s on this VM, and doing it
 * once per suite would eat most of the time budget. Users of it must put back what they change
 * (the rewind suite starts with {@link resetToInitial}). Removed when the process exits.
 */
export function sharedWorkspace(size: number, log: (message: string) => void): Promise<GitWorkspace> {
  let made = shared.get(size);
  if (!made) {
    made = (async () => {
      if (sharedRoot === undefined) {
        sharedRoot = await mkdtemp(join(tmpdir(), "agent-tape-bench-workspaces-"));
        const root = sharedRoot;
        process.once("exit", () => rmSync(root, { recursive: true, force: true }));
      }
      const started = performance.now();
      const dir = join(sharedRoot, `files-${size}`);
      const workspace = await makeWorkspace(join(dir, "workspace"), size);
      const { git, initialCommit } = await ShadowGit.create(join(dir, "shadow-git"), workspace.root);
      log(
        `  ${sizeLabel(size)} files: workspace and shadow git made in ` +
          `${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
      return { workspace, git, initialCommit };
    })();
    shared.set(size, made);
  }
  return made;
}

/** Puts a shared workspace back to its first commit: the hot file's original bytes, HEAD and index. */
export async function resetToInitial({ workspace, git, initialCommit }: GitWorkspace): Promise<void> {
  await writeFile(join(workspace.root, workspace.hotFile), hotFileText(0));
  await git.run(["reset", "-q", initialCommit]);
  const changed = await git.changedSince(initialCommit);
  if (changed !== "") throw new Error(`shared workspace differs from its first commit: ${changed.slice(0, 200)}`);
}

/**
 * Writes back everything dirty on the filesystem holding `path` (syncfs, via `sync -f`), untimed,
 * right before a timed operation. Git and the untimed edits leave data in the page cache; without
 * this, the next contender's fsyncs would pay for writing it back (ext4 commits one journal for
 * all), charging one contender for another's work.
 */
export async function settleDisk(path: string): Promise<void> {
  await promisify(execFile)("sync", ["-f", path]);
}
