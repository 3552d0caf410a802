// Two sessions' watchers in one process share one inotify descriptor (libuv's, one per event loop), so
// one kernel queue: a burst in one session's workspace can overflow it and drop the events of the other
// (docs/ARCHITECTURE.md, "Watched scans", the burst rule). The other session's next scan must still see
// a change made after the flood, though none of its own events told of a burst. Rounds: see ROUNDS.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { CheckpointStore, type CheckpointPayload, type ScanReport } from "../../../src/index.js";
import { rounds } from "../../helpers/rounds.js";
import { openStore, tempDir } from "../../helpers/fixture.js";

// 2 rounds in `npm test`, 3 when soaking (test/helpers/rounds.ts).
const ROUNDS = rounds(2, 3);

function queueLength(): number {
  try {
    return Number.parseInt(readFileSync("/proc/sys/fs/inotify/max_queued_events", "utf8"), 10);
  } catch {
    return 16384;
  }
}

it(`a flood in one session's workspace does not hide a change in another's (${ROUNDS} rounds)`, {
  timeout: 300_000,
}, async () => {
  for (let round = 0; round < ROUNDS; round++) {
    const base = await realpath(await tempDir("agent-tape-overflow-shared-"));
    const quiet = join(base, "quiet");
    const noisy = join(base, "noisy");
    await mkdir(join(quiet, "docs"), { recursive: true });
    await mkdir(join(noisy, "flood"), { recursive: true });
    await writeFile(join(quiet, "docs/readme.md"), "before\n");
    const store = openStore({ root: join(base, "sessions") });
    const scans: ScanReport[] = [];
    const checkpoints = new CheckpointStore(store, {
      workspaceIndex: { watch: true, maxFiles: 1_000_000, onScan: (scan) => scans.push(scan) },
    });
    const quietId = (await store.create({ workspace: quiet })).id;
    const noisyId = (await store.create({ workspace: noisy })).id;
    await checkpoints.aroundCommand(quietId, { tool: "bash" }, () => undefined);
    await checkpoints.aroundCommand(noisyId, { tool: "bash" }, () => undefined);
    // More events than the queue holds while this process's event loop is blocked in execFileSync, then one
    // change in the quiet workspace: its event is the one the kernel drops.
    const files = Math.ceil(queueLength() / 2) + 1000;
    const command =
      `for i in $(seq 1 ${files}); do echo $i > flood/f$i; done; ` + `echo after > ${quiet}/docs/readme.md`;
    await checkpoints.aroundCommand(noisyId, { tool: "bash" }, () => {
      execFileSync("bash", ["-c", command], { cwd: noisy, stdio: "ignore" });
    });
    // The quiet session's next command removes the file: its checkpoint keeps the bytes it had then.
    await checkpoints.aroundCommand(quietId, { tool: "bash" }, () => {
      execFileSync("rm", ["docs/readme.md"], { cwd: quiet });
    });
    const checkpoint = (await store.readAll(quietId)).filter((e) => e.type === "session_checkpoint").at(-1)!;
    expect((checkpoint.payload as CheckpointPayload).files, `round ${round}`).toMatchObject([
      { path: "docs/readme.md", kind: "blob", bytes: "after\n".length },
    ]);
    const quietBefore = scans.filter((s) => s.sessionId === quietId && s.phase === "before").at(-1)!;
    expect(quietBefore, `round ${round}`).toMatchObject({ walked: "whole" });
    checkpoints.close();
    await store.close();
  }
});
