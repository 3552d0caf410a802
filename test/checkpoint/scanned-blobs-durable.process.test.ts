import { describe, expect, it } from "vitest";
import { traceChild } from "../helpers/syscalls.js";
import { tempDir } from "../helpers/fixture.js";

// A shell command's scan stores the files' bytes without an fsync: nothing references them yet (docs/ARCHITECTURE.md,
// "Blobs"). A capture that finds those bytes stored already writes no blob, but its checkpoint references them:
// before the line that does is durable, so must they be, or a power loss leaves a checkpoint whose before-bytes are
// gone. Counted by strace in a real child (test/children/capture-of-scanned-traced.ts): the pack's segment is
// fdatasynced between the start and the checkpoint's write.

/** The child's traced calls around one capture of `count` files written first `by` a command or a capture. */
async function tracedCapture(count: number, by: "command" | "capture"): Promise<string[]> {
  const dir = await tempDir(`agent-tape-${by}-durable-`);
  const syscalls = ["fdatasync", "fsync", "syncfs", "write", "pwrite64"];
  const run = await traceChild("capture-of-scanned-traced.ts", [dir, String(count), by], syscalls, dir, {
    fdPaths: true,
  });
  expect(JSON.parse(run.stdout.trim())).toEqual({ files: count });
  return run.lines;
}

const logWrite = (line: string) => /write\(\d+<[^>]*\/events\.jsonl>/.test(line);
const files = (count: number) => `${count} file${count > 1 ? "s" : ""}`;

describe("bytes a scan stored without an fsync, referenced by a capture", () => {
  for (const count of [1, 20]) {
    it(`${files(count)}: the segment holding them is fdatasynced before the line`, async () => {
      const lines = await tracedCapture(count, "command");
      const checkpoint = lines.findIndex(logWrite);
      expect(checkpoint, lines.join("\n")).toBeGreaterThanOrEqual(0);
      const segmentSync = /^\d+\s+(fdatasync|fsync)\(\d+<[^>]*\/blobs\/pack\/\d{8}\.pack>/;
      const synced = lines.slice(0, checkpoint).some((line) => segmentSync.test(line) || /syncfs\(/.test(line));
      expect(synced, lines.join("\n")).toBe(true);
    });
  }

  // The other side: bytes this process made durable itself are not synced again at every capture of a file that did
  // not change (an fdatasync of the segment and fsyncs of its two folders, each a round trip through the pool).
  for (const count of [1, 20]) {
    it(`${files(count)} a capture stored durably, captured again: the pack not synced`, async () => {
      const lines = await tracedCapture(count, "capture");
      const packSyncs = lines.filter((line) => /(fdatasync|fsync)\(\d+<[^>]*\/blobs(\/pack)?[/>]/.test(line));
      expect(packSyncs, lines.join("\n")).toEqual([]);
      expect(lines.some(logWrite), lines.join("\n")).toBe(true);
    });
  }
});
