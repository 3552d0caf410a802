import { execFile } from "node:child_process";
import { stat, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { fsBackend } from "../src/backend/index.js";
import { CheckpointStore, SessionStore, rewind, undoRewind } from "../src/index.js";
import { ShadowGit } from "./git.js";
import type { Row, Suite } from "./harness.js";
import { editedText, makeWorkspace, sizeLabel, sourceText, spreadPick } from "./workspace.js";

const run = promisify(execFile);

/**
 * Disk of a session on a realistic workload against shadow git's repository once packed (`git gc`): a source
 * workspace, tool edits of one file, shell commands that edit many files, create some and remove a folder,
 * each step also committed by shadow git in the same tree; then rewind-and-undo cycles to the middle of the
 * session. Allocated bytes (`du -sk`), with small blobs packed (the default) and each blob its own file
 * (`packBlobsUnder: 0`); and what one rewind and its undo add to the log and records (docs/ARCHITECTURE.md,
 * "Blobs").
 */
export const diskCyclesSuite: Suite = {
  name: "disk-cycles",
  async run({ quick, tempDir, log }) {
    const size = quick ? 1000 : 5000;
    const edits = quick ? 30 : 150;
    const commands = quick ? 10 : 50;
    const cycles = 3;
    const dir = await tempDir();
    const workspace = await makeWorkspace(join(dir, "workspace"), size);
    const { git } = await ShadowGit.create(join(dir, "shadow-git"), workspace.root);
    const packed = new SessionStore({ backend: fsBackend({ root: join(dir, "store"), packBlobsUnder: 4096 }) });
    const loose = new SessionStore({ backend: fsBackend({ root: join(dir, "store-loose"), packBlobsUnder: 0 }) });
    try {
      const ours = new CheckpointStore(packed, { workspaceIndex: { maxFiles: 1_000_000 } });
      const theirs = new CheckpointStore(loose, { workspaceIndex: { maxFiles: 1_000_000 } });
      const a = await packed.create({ workspace: workspace.root });
      const b = await loose.create({ workspace: workspace.root });
      const picks = spreadPick(workspace.files, edits + commands * 12);
      let mid: [number, number] = [0, 0];
      const edit = async (file: string, version: number) => {
        const path = join(workspace.root, file);
        await writeFile(path, editedText(await readFile(path, "utf8"), version));
      };
      for (let step = 0; step < edits + commands; step++) {
        if (step === Math.floor((edits + commands) / 2)) {
          const say = { type: "message", payload: { role: "user", content: "the middle of the session" } } as const;
          mid = [(await packed.append(a.id, say)).sequence, (await loose.append(b.id, say)).sequence];
        }
        await git.checkpoint();
        if (step % 4 === 3 && step / 4 < commands) {
          // A shell command: a dozen files edited, a few made; every tenth removes a folder it made before.
          const c = Math.floor(step / 4);
          const files = picks.slice(edits + c * 12, edits + c * 12 + 12);
          const change = async () => {
            await Promise.all(files.map((file) => edit(file, step)));
            await mkdir(join(workspace.root, "gen", `c${c}`), { recursive: true });
            for (let i = 0; i < 4; i++)
              await writeFile(join(workspace.root, "gen", `c${c}`, `out${i}.ts`), sourceText(c * 10 + i, 900));
            if (c % 10 === 9) await rm(join(workspace.root, "gen", `c${c - 5}`), { recursive: true, force: true });
          };
          await theirs.aroundCommand(b.id, { tool: "bash" }, () => ours.aroundCommand(a.id, { tool: "bash" }, change));
        } else {
          const file = picks[step % edits]!;
          await theirs.around(b.id, { tool: "edit", paths: [file] }, () =>
            ours.around(a.id, { tool: "edit", paths: [file] }, () => edit(file, step)),
          );
        }
      }
      await git.checkpoint();
      const before = { ours: await du(join(dir, "store", a.id)), loose: await du(join(dir, "store-loose", b.id)) };
      await git.run(["gc", "-q"]);
      const gitBefore = await du(join(dir, "shadow-git"));
      const logOf = async (root: string, id: string) =>
        (await stat(join(root, id, "events.jsonl"))).size + 1024 * (await du(join(root, id, "records"), true));
      const recordBytes: number[] = [];
      let paths = 0;
      for (let cycle = 0; cycle < cycles; cycle++) {
        const startBytes = await logOf(join(dir, "store"), a.id);
        const report = await rewind(packed, a.id, { toSequence: mid[0] });
        paths = report.changes.length;
        await undoRewind(packed, a.id);
        recordBytes.push((await logOf(join(dir, "store"), a.id)) - startBytes);
        await rewind(loose, b.id, { toSequence: mid[1] });
        await undoRewind(loose, b.id);
        // Shadow git's rewind and undo: the middle commit's tree, then the last one's, both exact.
        const head = await git.head();
        await git.run([
          "restore",
          "--source",
          `${head}~${Math.ceil((edits + commands) / 2)}`,
          "--staged",
          "--worktree",
          ".",
        ]);
        await git.run(["restore", "--source", head, "--staged", "--worktree", "."]);
        await git.run(["clean", "-fdq"]);
      }
      await git.run(["gc", "-q"]);
      const after = { ours: await du(join(dir, "store", a.id)), loose: await du(join(dir, "store-loose", b.id)) };
      const gitAfter = await du(join(dir, "shadow-git"));
      const mb = (kb: number) => kb / 1024;
      const f1 = (kb: number) => mb(kb).toFixed(1);
      const perCycle = recordBytes.map((x) => (x / 1024).toFixed(0)).join(", ");
      const suite = `disk of a session (${edits} edits, ${commands} commands @${sizeLabel(size)}) vs packed shadow git`;
      log(
        `  disk: ours ${f1(before.ours)} MB (loose ${f1(before.loose)} MB), git ${f1(gitBefore)} MB; ` +
          `after ${cycles} rewind+undo: ours ${f1(after.ours)} MB (loose ${f1(after.loose)} MB), ` +
          `git ${f1(gitAfter)} MB; one rewind+undo of ${paths} paths adds ${perCycle} KB`,
      );
      const git0 = { label: "shadow .git after git gc (du)", value: mb(gitBefore), unit: "MB" as const };
      const git1 = { label: "shadow .git after git gc (du)", value: mb(gitAfter), unit: "MB" as const };
      const rows: Row[] = [
        {
          suite,
          ours: { label: "session folder (du), small blobs packed", value: mb(before.ours), unit: "MB" },
          baseline: git0,
          ratio: before.ours / gitBefore,
          target: { op: "<=", value: 1, on: "ratio" },
          notes: `each blob its own file: ${f1(before.loose)} MB (${(before.loose / gitBefore).toFixed(2)}x git)`,
        },
        {
          suite: `${suite}, after ${cycles} rewind-and-undo cycles`,
          ours: { label: "session folder (du), small blobs packed", value: mb(after.ours), unit: "MB" },
          baseline: git1,
          ratio: after.ours / gitAfter,
          target: { op: "<=", value: 1, on: "ratio" },
          notes: `each blob its own file: ${mb(after.loose).toFixed(1)} MB; rewinds of ${paths} paths`,
        },
        {
          suite: `log and records added by one rewind and its undo (${paths} paths)`,
          ours: { label: "bytes added (median of cycles)", value: median(recordBytes) / 1024 / 1024, unit: "MB" },
          baseline: undefined,
          ratio: undefined,
          target: undefined,
          notes: `per cycle: ${recordBytes.map((x) => `${(x / 1024).toFixed(0)} KB`).join(", ")}; kept archives count`,
        },
      ];
      return rows;
    } finally {
      await packed.close();
      await loose.close();
    }
  },
};

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Allocated KiB under `path` (`du -sk`), or its apparent size. */
async function du(path: string, apparent = false): Promise<number> {
  const { stdout } = await run("du", apparent ? ["-sk", "--apparent-size", path] : ["-sk", path]);
  return Number(stdout.split("\t")[0]);
}
