// A burst of events larger than the kernel's inotify queue (fs.inotify.max_queued_events) while the
// event loop is blocked: the kernel drops what comes after the queue is full, and libuv drops the
// overflow notice itself, so nothing tells the watcher. The change made last, after the flood, is
// the one lost. A watched scan must still record it (it walks when a burst may have overflowed).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { CheckpointStore, type CheckpointPayload, type ScanReport } from "../../../src/index.js";
import { openStore, tempDir } from "../../helpers/fixture.js";

function queueLength(): number {
  try {
    return Number.parseInt(readFileSync("/proc/sys/fs/inotify/max_queued_events", "utf8"), 10);
  } catch {
    return 16384;
  }
}

it("a change after a flood that overflowed the kernel's queue is recorded", { timeout: 180_000 }, async () => {
  const base = await realpath(await tempDir("agent-tape-overflow-"));
  const workspace = join(base, "ws");
  await mkdir(join(workspace, "flood"), { recursive: true });
  await mkdir(join(workspace, "docs"));
  await writeFile(join(workspace, "docs/readme.md"), "before\n");
  const store = openStore({ root: join(base, "sessions") });
  const scans: ScanReport[] = [];
  const checkpoints = new CheckpointStore(store, {
    workspaceIndex: { watch: true, maxFiles: 1_000_000, onScan: (scan) => scans.push(scan) },
  });
  const { id } = await store.create({ workspace });
  await checkpoints.aroundCommand(id, { tool: "bash" }, () => undefined);
  // Each new file raises two events (create, write): more than the queue holds, while this process's
  // event loop is blocked in execFileSync and reads none of them.
  const files = Math.ceil(queueLength() / 2) + 1000;
  const command = `for i in $(seq 1 ${files}); do echo $i > flood/f$i; done; echo after > docs/readme.md`;
  await checkpoints.aroundCommand(id, { tool: "bash" }, () => {
    execFileSync("bash", ["-c", command], { cwd: workspace, stdio: "ignore" });
  });
  const checkpoint = (await store.readAll(id)).filter((e) => e.type === "session_checkpoint").at(-1)!;
  const paths = (checkpoint.payload as CheckpointPayload).files.map((f) => f.path);
  expect(paths).toContain("docs/readme.md");
  expect(paths.filter((p) => p.startsWith("flood/f"))).toHaveLength(files);
  expect(scans.at(-1)).toMatchObject({ phase: "after", walked: "whole" });
  expect(scans.at(-1)!.reason).toMatch(/events in a burst/);
  checkpoints.close();
  await store.close();
});
