import { afterEach, describe, expect, it } from "vitest";
import { traceChild } from "../helpers/syscalls.js";
import { TempRoots } from "../helpers/temp-root.js";

// How many times a rewind waits for the disk, counted by strace in a real child process (docs/ARCHITECTURE.md,
// "Rewind intent"): each file's own fsync and its folder's, per restored file and per undo blob, made a
// rewind of 1000 files slower than `git restore` (~1 ms a file). Many files are made durable together.

const temp = new TempRoots();
afterEach(() => temp.removeAll());

const DURABLE = ["fsync", "fdatasync", "syncfs"];

async function rewindTraced(files: number) {
  const dir = await temp.make("agent-tape-durable-calls-");
  const run = await traceChild("rewind-traced.ts", [dir, String(files)], DURABLE, dir);
  const report = JSON.parse(run.stdout.trim()) as { filesRestored: number; intact: boolean };
  const total = DURABLE.reduce((sum, name) => sum + (run.calls.get(name) ?? 0), 0);
  return { report, total, calls: Object.fromEntries(run.calls) };
}

describe("durable calls of a rewind (strace)", () => {
  it("100 files in 10 folders: a few syncs in all, not one per file, and every file restored", async () => {
    const { report, total, calls } = await rewindTraced(100);
    expect(report).toEqual({ filesRestored: 100, intact: true });
    // Per file, the undo blob's fsync and its shard's, and the restored file's: 300 and more before.
    expect(total, JSON.stringify(calls)).toBeLessThanOrEqual(20);
    expect(calls.syncfs ?? 0, JSON.stringify(calls)).toBeGreaterThanOrEqual(1);
  });

  it("1 file: the per-file path, still a bounded number of syncs", async () => {
    const { report, total, calls } = await rewindTraced(1);
    expect(report).toEqual({ filesRestored: 1, intact: true });
    expect(total, JSON.stringify(calls)).toBeLessThanOrEqual(12);
    expect(calls.syncfs ?? 0).toBe(0);
  });
});
