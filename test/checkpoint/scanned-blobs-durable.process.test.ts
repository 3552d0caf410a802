import { describe, expect, it } from "vitest";
import { traceChild } from "../helpers/syscalls.js";
import { tempDir } from "../helpers/fixture.js";

// A shell command's scan stores the files' bytes without an fsync: nothing references them yet (docs/ARCHITECTURE.md,
// "Blobs"). A capture that finds those bytes stored already writes no blob, but its checkpoint references them:
// before the line that does is durable, so must they be, or a power loss leaves a checkpoint whose before-bytes are
// gone. Counted by strace in a real child (test/children/capture-of-scanned-traced.ts): the pack's segment is
// fdatasynced between the start and the checkpoint's write.

describe("bytes a scan stored without an fsync, referenced by a capture", () => {
  for (const count of [1, 20]) {
    it(`${count} file${count > 1 ? "s" : ""}: the segment holding them is fdatasynced before the line`, async () => {
      const dir = await tempDir("agent-tape-scanned-durable-");
      const run = await traceChild(
        "capture-of-scanned-traced.ts",
        [dir, String(count), "command"],
        ["fdatasync", "fsync", "syncfs", "write", "pwrite64"],
        dir,
        { fdPaths: true },
      );
      expect(JSON.parse(run.stdout.trim())).toEqual({ files: count });
      const checkpoint = run.lines.findIndex((line) => /write\(\d+<[^>]*\/events\.jsonl>/.test(line));
      expect(checkpoint, run.lines.join("\n")).toBeGreaterThanOrEqual(0);
      const synced = run.lines
        .slice(0, checkpoint)
        .some(
          (line) =>
            /^\d+\s+(fdatasync|fsync)\(\d+<[^>]*\/blobs\/pack\/\d{8}\.pack>/.test(line) || /syncfs\(/.test(line),
        );
      expect(synced, run.lines.join("\n")).toBe(true);
    });
  }

  // The other side: bytes this process made durable itself are not synced again at every capture of a file that did
  // not change (an fdatasync of the segment and fsyncs of its two folders, each a round trip through the pool).
  for (const count of [1, 20]) {
    it(`${count} file${count > 1 ? "s" : ""} a capture stored durably, captured again: pack not synced`, async () => {
      const dir = await tempDir("agent-tape-captured-durable-");
      const run = await traceChild(
        "capture-of-scanned-traced.ts",
        [dir, String(count), "capture"],
        ["fdatasync", "fsync", "syncfs", "write", "pwrite64"],
        dir,
        { fdPaths: true },
      );
      expect(JSON.parse(run.stdout.trim())).toEqual({ files: count });
      const packSyncs = run.lines.filter((line) => /(fdatasync|fsync)\(\d+<[^>]*\/blobs(\/pack)?[/>]/.test(line));
      expect(packSyncs, run.lines.join("\n")).toEqual([]);
      expect(run.lines.some((line) => /write\(\d+<[^>]*\/events\.jsonl>/.test(line))).toBe(true);
    });
  }
});
