import { describe, expect, it } from "vitest";
import { DURABLE_CALLS, FS_CALLS, traceChild } from "../helpers/syscalls.js";
import { readFile } from "node:fs/promises";
import { tempDir } from "../helpers/fixture.js";
import { keptFolderBudget } from "../../src/checkpoint/folder-budget.js";

// How many times a rewind waits for the disk, counted by strace in a real child process (docs/ARCHITECTURE.md,
// "Rewind intent"): each file's own fsync and its folder's, per restored file and per undo blob, made a
// rewind of 1000 files slower than `git restore` (~1 ms a file). Many files are made durable together; a
// few carry their undo bytes in the intent, and every file-system call (a thread-pool round trip) counts.

// Under strace, with the whole session built first (100 captures), on a loaded 2-core machine.
const TRACED_TIMEOUT = 120_000;

async function rewindTraced(files: number, script = "rewind-traced.ts", perFolder = 10) {
  const dir = await tempDir("agent-tape-durable-calls-");
  const run = await traceChild(script, [dir, String(files), String(perFolder)], FS_CALLS, dir, { fdPaths: true });
  const report = JSON.parse(run.stdout.trim()) as { filesRestored: number; intact: boolean };
  const total = DURABLE_CALLS.reduce((sum, name) => sum + (run.calls.get(name) ?? 0), 0);
  const fsCalls = [...run.calls.values()].reduce((sum, n) => sum + n, 0);
  const opened = (pattern: RegExp) => run.lines.filter((line) => /\sopenat\(/.test(line) && pattern.test(line)).length;
  return { report, total, fsCalls, offMainThread: run.offMainThread, calls: Object.fromEntries(run.calls), opened };
}

describe("durable calls of a rewind (strace)", () => {
  it(
    "100 files in 10 folders: a few syncs in all, not one per file, and every file restored",
    async () => {
      const { report, total, calls } = await rewindTraced(100);
      expect(report).toEqual({ filesRestored: 100, intact: true });
      // Per file, the undo blob's fsync and its shard's, and the restored file's: 300 and more before.
      expect(total, JSON.stringify(calls)).toBeLessThanOrEqual(20);
      expect(calls.syncfs ?? 0, JSON.stringify(calls)).toBeGreaterThanOrEqual(1);
    },
    TRACED_TIMEOUT,
  );

  it(
    "100 files: the undo blobs packed in one write and synced with the intent bytes, the files in one syncfs",
    async () => {
      const { report, calls } = await rewindTraced(100);
      expect(report).toEqual({ filesRestored: 100, intact: true });
      // The rounds a rewind waits for (docs/ARCHITECTURE.md, "Rewind intent"): (1) the undo blobs and the intent's
      // bytes at once: the blobs are appended to the pack in one write (docs/ARCHITECTURE.md, "Batched file work"),
      // so its segment's fdatasync (and, for a new segment, the pack's folder and blobs/) beside the intent temp's
      // fsync; (2) the intent's rename, records/ fsynced; (3) the files, one syncfs; (4) the marker, O_DSYNC
      // (fdatasync under strace only if the log is cut in place). Before the pack: a syncfs for the 100 blob files.
      expect(calls.pwrite64 ?? 0, JSON.stringify(calls)).toBe(1);
      expect(calls.syncfs ?? 0, JSON.stringify(calls)).toBe(1);
      expect((calls.fsync ?? 0) + (calls.fdatasync ?? 0), JSON.stringify(calls)).toBeLessThanOrEqual(6);
    },
    TRACED_TIMEOUT,
  );

  it(
    "1 file: at most 9 fsyncs and 156 file-system calls, the undo bytes inside the intent",
    async () => {
      const { report, total, fsCalls, offMainThread, calls } = await rewindTraced(1);
      expect(report).toEqual({ filesRestored: 1, intact: true });
      // Off the main thread, each call a round trip through libuv's thread pool: 84 before the small steps (the
      // session's file, the records and their listing, the workspace lock and its note, a small file's temp,
      // rename and close, the log's cut records, the copy of the few cut events) were made with synchronous
      // calls, 31 once they were; then the log's reads, the workspace's realpath, the records' folder looks, the
      // intent's removal, the holder note's and the restored file's open and close for its fsync went too: 10 since
      // (docs/ARCHITECTURE.md, "Batched file work"), the eight waits for the disk, the restored file's rename and
      // the lock's close.
      expect(offMainThread, JSON.stringify(calls)).toBeLessThanOrEqual(14);
      // The intent and its folder; then at once the restored file, its folder, the undo blob, its shard and
      // blobs/; then the cut log and its folder. Earlier versions: 9 as well, but 9 waits one after another
      // (the undo blob's three before the intent), and ~190 calls (the blob read twice, parents looked at).
      expect(total, JSON.stringify(calls)).toBeLessThanOrEqual(9);
      expect(calls.syncfs ?? 0).toBe(0);
      // 132 with loose blob files; with small blobs in the session's pack by default, 154: the pack looked at
      // before each of its reads and writes, its folder listed each time while its last change is under 2 s old
      // (src/backend/fs/pack-listing.ts), as in this new session; one fsync fewer.
      expect(fsCalls, JSON.stringify(calls)).toBeLessThanOrEqual(156);
    },
    TRACED_TIMEOUT,
  );

  it(
    "a 1-file shell command in a 1000-file workspace (files, keepUndo 0): 4 fsyncs and under 100 calls",
    async () => {
      const { report, total, fsCalls, calls } = await rewindTraced(1000, "shell-rewind-traced.ts");
      expect(report).toEqual({ filesRestored: 1, intact: true });
      // The intent and its folder; then at once the restored file and its folder (the marker's write is
      // O_DSYNC). The bytes it replaces are the index's, kept anyway: not fsynced again (the marker names no
      // undo) and not pruned (they were there before). Before: 7 fsyncs and 102 calls (those bytes fsynced
      // with their shard and blobs/; a prune that listed records/ and read the whole log; the target read
      // twice; records/ made and looked at again for the intent; the intent looked at twice to delete it).
      // The calls went from under 70 to 92 with two safety steps that write nothing durable: the workspace lock
      // (its folder looked at and made, its note written and removed) and the look at each path right before it
      // is replaced (opened, read, hashed: docs/ARCHITECTURE.md, "Conflicts" and "Workspace lock").
      expect(total, JSON.stringify(calls)).toBeLessThanOrEqual(4);
      expect(fsCalls, JSON.stringify(calls)).toBeLessThanOrEqual(100);
    },
    TRACED_TIMEOUT,
  );

  it(
    "600 files in 300 folders: each folder opened once by the plan, once by the restore; the pack's segment kept open",
    async () => {
      // The folders one operation keeps follow the process's descriptor limit (folder-budget.ts); this machine's
      // (test/setup) allows well over 300.
      expect(keptFolderBudget(await readFile("/proc/self/limits", "utf8"))).toBeGreaterThanOrEqual(300);
      const { report, calls, opened } = await rewindTraced(600, "rewind-traced.ts", 2);
      expect(report).toEqual({ filesRestored: 600, intact: true });
      // Past 256 folders every folder was opened, checked and closed again at each use (776 folder opens), and each
      // before-blob's read looked at blobs/ and blobs/pack/ and opened its segment (600 and more). Then, with the
      // first 256 kept to the end and the 16 used last, the plan opened the 44 past the 256th again at each walk
      // (644), and a 1,000-file rewind over 500 folders spent a fifth of its time on such opens. Now each folder is
      // opened once by the plan's look and once by the restore, and the segment once or so (docs/ARCHITECTURE.md,
      // "Batched file work", "Small blobs packed"). Counted by what is opened: how many files are read again at the
      // last look depends on how long ago they changed (file-stamps.ts).
      const folders = opened(/"[^"]*\/ws\/pkg-\d+\/src", O_RDONLY\|O_CLOEXEC\|O_DIRECTORY/);
      const segments = opened(/\/blobs\/pack\/\d{8}\.pack"/);
      const seen = JSON.stringify({ folders, segments, ...calls });
      expect(folders, seen).toBeLessThanOrEqual(600);
      expect(segments, seen).toBeLessThanOrEqual(20);
      // Each folder's open is checked by a readlink of its descriptor; the others: the workspace's real path.
      expect(calls.readlink ?? 0, seen).toBeLessThanOrEqual(610);
    },
    TRACED_TIMEOUT,
  );
});
