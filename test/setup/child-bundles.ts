// Global setup of every project whose tests start child processes (vitest.config.ts): bundles each child script
// (test/children/, examples/) once per run with esbuild, so a child starts under plain `node` instead of compiling
// its TypeScript through tsx at each start. Why and what it saves: docs/testing.md, "Child processes".
//
// The bundles live in node_modules/.cache/agent-tape-children/<key>/, where the packages they leave out resolve
// as they do for the sources. The key hashes every file a bundle can include, so a rerun with nothing changed
// reuses them, and a changed source builds a new set. test/helpers/children.ts runs them, and refuses a bundle
// that is missing or older than one of its sources.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build, version as esbuildVersion } from "esbuild";
import type { TestProject } from "vitest/node";
import { BUNDLE_INDEX, type BundleIndex, digest } from "../helpers/child-bundle-index.js";

const repository = fileURLToPath(new URL("../..", import.meta.url));
const cache = join(repository, "node_modules", ".cache", "agent-tape-children");
/** The folders whose scripts run as children; each .ts in them becomes a bundle (entry points). */
const entryFolders = ["test/children", "examples"];
/** What a bundle can include: the sources, the children, the helpers they import, and how they are compiled. */
const sourceFolders = ["src", "test/children", "test/helpers", "examples"];
const sourceFiles = ["tsconfig.json", "package.json", "test/setup/child-bundles.ts"];

function tsFiles(folder: string): string[] {
  return readdirSync(join(repository, folder), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .map((name) => join(folder, name))
    .sort();
}

function key(): string {
  const hash = createHash("sha256").update(`esbuild ${esbuildVersion}\n`);
  for (const file of [...sourceFiles, ...sourceFolders.flatMap(tsFiles)]) {
    hash
      .update(`${file}\n`)
      .update(readFileSync(join(repository, file)))
      .update("\n");
  }
  return hash.digest("hex").slice(0, 16);
}

/** Builds the bundles if this key has none yet; returns their folder. */
export async function buildChildBundles(): Promise<string> {
  const folder = join(cache, key());
  if (existsSync(join(folder, BUNDLE_INDEX))) return folder;
  const building = `${folder}.${process.pid}.tmp`;
  const builtAtMs = Date.now();
  const result = await build({
    absWorkingDir: repository,
    entryPoints: entryFolders.flatMap(tsFiles),
    outbase: ".",
    outdir: building,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: `node${process.versions.node}`,
    // Packages stay imports, resolved from node_modules at run time as under tsx: one copy of each, and the
    // package's own entries ("agent-tape/…") map to src/ through tsconfig.json "paths" before this applies.
    packages: "external",
    // Class and function names as in the source: errors and messages print them.
    keepNames: true,
    metafile: true,
    logLevel: "warning",
  });
  const inputs: Record<string, string[]> = {};
  for (const [output, meta] of Object.entries(result.metafile.outputs)) {
    inputs[relative(building, join(repository, output))] = Object.keys(meta.inputs).filter(
      (input) => !input.startsWith("node_modules/"),
    );
  }
  const digests = Object.fromEntries([...new Set(Object.values(inputs).flat())].map((file) => [file, digest(file)]));
  writeFileSync(join(building, BUNDLE_INDEX), JSON.stringify({ builtAtMs, inputs, digests } satisfies BundleIndex));
  try {
    renameSync(building, folder);
  } catch (error) {
    // Another run (a second vitest in this checkout) built the same sources first: use its set.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
    rmSync(building, { recursive: true, force: true });
  }
  forgetOldBundles(folder);
  return folder;
}

/** Removes the sets of earlier sources a day after their build: another run in this checkout may still use one. */
function forgetOldBundles(keep: string): void {
  for (const name of readdirSync(cache)) {
    const path = join(cache, name);
    if (path !== keep && Date.now() - statSync(path).mtimeMs > 86_400_000)
      rmSync(path, { recursive: true, force: true });
  }
}

export default async function setup(project: TestProject): Promise<void> {
  project.provide("childBundles", await buildChildBundles());
  // In watch mode a rerun after an edit gets bundles of the edited sources.
  project.onTestsRerun(async () => project.provide("childBundles", await buildChildBundles()));
}
