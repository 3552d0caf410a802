import { describe, expect, it } from "vitest";
import { FS_CALLS, traceChild } from "../helpers/syscalls.js";
import { tempDir } from "../helpers/fixture.js";

// A rewind that removes a folder a tool or a command made (a generator's output, a copied tree) removes every
// entry in it. Made through libuv's thread pool, each lstat and unlink was a round trip from the event loop, and a
// folder of 50 files took ~15 ms to remove (docs/ARCHITECTURE.md, "Batched file work"). Counted by strace in a
// real child process: the calls each thread made.

// Under strace, on a loaded 2-core machine.
const TRACED_TIMEOUT = 120_000;

describe("removing a folder in a rewind (strace)", () => {
  it(
    "a folder of 300 files in 10 folders: removed with calls on the main thread, not a round trip per entry",
    async () => {
      const dir = await tempDir("agent-tape-folder-removal-");
      const run = await traceChild("folder-rewind-traced.ts", [dir, "300"], [...FS_CALLS, "rmdir"], dir);
      expect(JSON.parse(run.stdout.trim())).toEqual({ filesDeleted: 1, gone: true });
      const calls = Object.fromEntries(run.calls);
      expect(calls.unlink ?? 0, JSON.stringify(calls)).toBeGreaterThanOrEqual(300);
      // Before: an lstat and an unlink of each file, and an lstat, open, close and rmdir of each folder, all
      // off the main thread (~650 for this folder). What is left there: the rewind's own steps, about 60.
      expect(run.offMainThread, JSON.stringify(calls)).toBeLessThan(120);
    },
    TRACED_TIMEOUT,
  );
});
