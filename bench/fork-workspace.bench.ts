import { execFile } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { CheckpointStore, SessionStore, forkIntoWorkspace } from "../src/index.js";
import { timeIt, type Row, type Suite } from "./harness.js";
import { formatMs, perOperation } from "./per-operation.js";
import { absolute, editedText, makeWorkspace, settleDisk, sizeLabel, spreadPick } from "./workspace.js";

const run = promisify(execFile);

/**
 * `forkIntoWorkspace` of a session whose shell commands made it index its whole workspace, forked at a point
 * before its last command (which changed 50 files: the plan restores them), against `cp -a` of the same tree,
 * rounds alternating. `cp -a` syncs nothing; the fork makes its folder durable (one syncfs) before it makes
 * the session, and reads the tape and the blobs it restores. Reported, no target (docs/ARCHITECTURE.md, "Forks").
 */
export const forkWorkspaceSuite: Suite = {
  name: "fork-workspace",
  async run({ quick, tempDir, log }) {
    const size = quick ? 500 : 5000;
    const rounds = quick ? 2 : 5;
    const dir = await tempDir();
    const ws = await makeWorkspace(join(dir, "ws"), size);
    const store = new SessionStore({ root: join(dir, "store") });
    const rows: Row[] = [];
    try {
      const checkpoints = new CheckpointStore(store);
      const { id } = await store.create({ workspace: ws.root });
      log(`  ${sizeLabel(size)} files: first scan`);
      await checkpoints.aroundCommand(id, { tool: "bash" }, () => writeFile(absolute(ws, ws.hotFile), "v1\n"));
      const point = (await store.append(id, { type: "message", payload: { role: "user", content: "fork here" } }))
        .sequence;
      const changed = spreadPick(ws.files, 50);
      await checkpoints.aroundCommand(id, { tool: "bash" }, async () => {
        for (const [i, file] of changed.entries()) await writeFile(absolute(ws, file), editedText("", i));
      });
      const ours: number[] = [];
      const copy: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const forked = join(dir, `fork-${round}`);
        const copied = join(dir, `copy-${round}`);
        await settleDisk(dir);
        let sessionId = "";
        ours.push(
          await timeIt(async () => {
            sessionId = (await forkIntoWorkspace(store, id, { atSequence: point, workspace: forked })).session.id;
          }),
        );
        await settleDisk(dir);
        copy.push(await timeIt(async () => void (await run("cp", ["-a", ws.root, copied]))));
        await store.delete(sessionId);
        await rm(forked, { recursive: true, force: true });
        await rm(copied, { recursive: true, force: true });
      }
      const oursFigure = perOperation("forkIntoWorkspace (files/s)", ours, size);
      const copyFigure = perOperation("cp -a of the tree (files/s)", copy, size);
      rows.push({
        suite: `fork into its own folder @${sizeLabel(size)} files vs cp -a`,
        ours: oursFigure,
        baseline: copyFigure,
        ratio: oursFigure.value / copyFigure.value,
        target: undefined,
        notes: `${formatMs(oursFigure, size)} vs ${formatMs(copyFigure, size)} per fork; 50 files restored`,
      });
    } finally {
      await store.close();
    }
    return rows;
  },
};
