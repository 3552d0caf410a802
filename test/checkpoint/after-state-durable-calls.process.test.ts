import { describe, expect, it } from "vitest";
import { DURABLE_CALLS, FS_CALLS, traceChild } from "../helpers/syscalls.js";
import { tempDir } from "../helpers/fixture.js";

// What recording a tool's after-state costs in waits for the disk, counted by strace in a real child process
// (docs/ARCHITECTURE.md, "Conflicts"): at most one hash and no extra fsync per touched file. `after` (what
// `around` adds to a call) is one append, so one sync whatever the number of files; a shell command's
// after-state rides in its checkpoint's append, so it adds none.

const TRACED_TIMEOUT = 120_000;

/**
 * One traced run: the events appended, the fsync-family calls, and the writes to the log (opened O_DSYNC, so
 * each such write is also its wait for the disk: src/backend/fs/locked-session.ts) or to anything else below
 * the store (a blob, a record, the workspace index).
 */
async function traced(files: number, kind: "after" | "command" | "command-without") {
  const dir = await tempDir("agent-tape-after-state-calls-");
  const syscalls = [...FS_CALLS, "write", "pwrite64", "writev", "pwritev"];
  const run = await traceChild("after-state-traced.ts", [dir, String(files), kind], syscalls, dir, { fdPaths: true });
  const durable = DURABLE_CALLS.reduce((sum, name) => sum + (run.calls.get(name) ?? 0), 0);
  const writes = run.lines.filter((line) => /^\d+\s+p?writev?(64)?\(\d+</.test(line));
  const logWrites = writes.filter((line) => /\/events\.jsonl>/.test(line)).length;
  // The lock's holder file is written when the lock is taken anew, which the lease's timing decides: left out.
  const storeWrites = writes.filter(
    (line) => line.includes(`${dir}/store/`) && !/\/events\.(jsonl|holder)>/.test(line),
  ).length;
  return {
    appended: JSON.parse(run.stdout.trim()) as [string, number][],
    durable,
    logWrites,
    storeWrites,
    calls: JSON.stringify(Object.fromEntries(run.calls)),
  };
}

describe("durable calls of an after-state (strace)", () => {
  it(
    "after() of 1 file and of 40 files: one session_file_states event, one durable write of the log, no fsync",
    async () => {
      const one = await traced(1, "after");
      const forty = await traced(40, "after");
      expect(one.appended).toEqual([["session_file_states", 1]]);
      expect(forty.appended).toEqual([["session_file_states", 40]]);
      for (const run of [one, forty]) {
        expect(run.durable, run.calls).toBe(0); // no fsync: the log's one O_DSYNC write is the wait
        expect(run.logWrites, run.calls).toBe(1);
      }
      // Nothing else is written below the store: no blob, no record.
      expect([one.storeWrites, forty.storeWrites]).toEqual([0, 0]);
    },
    TRACED_TIMEOUT,
  );

  it(
    "a shell command changing 40 files: its after-state adds no sync to the capture",
    async () => {
      const withStates = await traced(40, "command");
      const without = await traced(40, "command-without");
      expect(withStates.appended).toEqual([
        ["session_checkpoint", 40],
        ["session_file_states", 40],
      ]);
      expect(without.appended).toEqual([["session_checkpoint", 40]]);
      const calls = `${withStates.calls} vs ${without.calls}`;
      expect(withStates.durable, calls).toBe(without.durable);
      expect(withStates.logWrites, calls).toBe(without.logWrites); // one append carries both events
      expect(withStates.storeWrites, calls).toBe(without.storeWrites);
    },
    TRACED_TIMEOUT,
  );
});
