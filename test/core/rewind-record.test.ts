import { copyFile, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseEventLine, serializeEvent } from "../../src/core/envelope.js";
import {
  REWIND_RECORD_VERSION,
  compactRewindPayload,
  compactRewindPayloadSliced,
} from "../../src/core/rewind-record.js";
import { SLICE_MS } from "../../src/core/time-slices.js";
import { RewindPayload, type StoredEvent } from "../../src/core/events.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { withTimerTurns } from "../helpers/timer-turns.js";

/** A rewind and its undo, written by the version before the compact form (format.md, "Rewind markers"). */
const V1_LOG = join(import.meta.dirname, "../rewind/fixtures/rewind-records-v1.jsonl");
const V1_SESSION = "01M8VCBYAB1ZAK0NSMAJSK02NA";

const hash = (c: string) => c.repeat(64);

function marker(payload: unknown): StoredEvent {
  return { v: 1, id: "m", sessionId: "s", sequence: 9, type: "session_rewind", createdAt: "t", payload };
}

/** The payload once written as a line and read back. */
function roundTrip(payload: unknown): { line: Record<string, unknown>; read: unknown } {
  const text = serializeEvent(marker(payload));
  const read = parseEventLine(text);
  if (typeof read === "string") throw new Error(read);
  return { line: JSON.parse(text).payload, read: read.payload };
}

describe("rewind markers on the tape", () => {
  it("markers written before the compact form read as they were written, by a store too", async () => {
    const lines = (await readFile(V1_LOG, "utf8")).split("\n").filter((l) => l !== "");
    const markers = lines.filter((l) => JSON.parse(l).type === "session_rewind");
    expect(markers).toHaveLength(2);
    for (const text of markers) {
      const read = parseEventLine(text) as StoredEvent;
      expect(read.payload).toEqual(JSON.parse(text).payload);
      expect(RewindPayload.safeParse(read.payload).success).toBe(true);
    }
    const root = await tempDir();
    await mkdir(join(root, V1_SESSION));
    await copyFile(V1_LOG, join(root, V1_SESSION, "events.jsonl"));
    const store = openStore({ root });
    const read = (await store.readAll(V1_SESSION)).filter((e) => e.type === "session_rewind");
    expect(read.map((e) => e.payload)).toEqual(markers.map((text) => JSON.parse(text).payload));
  });

  it("an old marker written again takes the compact form and reads back the same", async () => {
    const lines = (await readFile(V1_LOG, "utf8")).split("\n").filter((l) => l !== "");
    for (const text of lines.filter((l) => JSON.parse(l).type === "session_rewind")) {
      const payload = JSON.parse(text).payload;
      const { line, read } = roundTrip(payload);
      expect(line.v).toBe(REWIND_RECORD_VERSION);
      expect(Array.isArray(line.paths)).toBe(true);
      expect(read).toEqual(payload);
      expect(serializeEvent(marker(read)).length).toBeLessThan(text.length);
    }
  });

  it("every record shape reads back exactly, the unusual ones kept as they are", () => {
    const payload = {
      targetSequence: 3,
      mode: "files",
      filesRestored: 2,
      filesDeleted: 1,
      skipped: ["big.bin", "weird"],
      changes: [
        { path: "a.ts", action: "restore", diff: { unit: "lines", insertions: 0, deletions: 2 } },
        { path: "b.bin", action: "restore", diff: { unit: "bytes", insertions: 5, deletions: 0, reason: "binary" } },
        { path: "gone", action: "delete" },
        { path: "big.bin", action: "skip", reason: "too_large" },
        {
          path: "dir",
          action: "delete",
          unrecoverable: [{ path: "dir/x", reason: "too_large", detail: "9 MB" }],
        },
        { path: "weird", action: "skip", reason: "conflict", extra: { kept: true } },
        { path: "odd-diff", action: "restore", diff: { unit: "lines", insertions: 1, deletions: 1, more: 1 } },
      ],
      eventsRemoved: 0,
      blobsPruned: 0,
      reappendedRanges: [[4, 6]],
      undo: {
        workspace: "/w",
        archive: "rewind-archive-9",
        files: [
          { path: "a.ts", kind: "blob", blob: hash("a"), bytes: 0, mode: 0o644, uid: 0, gid: 0 },
          { path: "b.bin", kind: "blob", blob: hash("b"), bytes: 5, mode: 0o755 },
          { path: "gone", kind: "absent" },
          { path: "link", kind: "symlink", target: "../a.ts", gid: 7 },
          { path: "dir", kind: "directory", mode: 0o700, complete: false },
          { path: "dir2", kind: "directory", mode: 0o755, complete: true, uid: 1 },
          { path: "big.bin", kind: "skipped", reason: "too_large", detail: "20 MB" },
          { path: "not-hex", kind: "blob", blob: "ABC", bytes: 1, mode: 0o644 },
          { path: "new-kind", kind: "fifo", mode: 0o644 },
        ],
      },
      wrote: {
        workspace: "/w",
        files: [
          { path: "a.ts", kind: "file", sha256: hash("c"), mode: 0o644 },
          { path: "gone", kind: "absent" },
          { path: "link", kind: "symlink", target: "x" },
          { path: "dir", kind: "directory", mode: 0o700 },
          { path: "u", kind: "unknown", reason: "EACCES" },
        ],
      },
      extraField: ["kept"],
    };
    const { line, read } = roundTrip(payload);
    expect(read).toEqual(payload);
    // the records kept as objects ("weird", "not-hex", "new-kind") keep their own path; the skipped list names "weird"
    expect(line.paths).toEqual(["a.ts", "b.bin", "gone", "big.bin", "dir", "odd-diff", "weird", "link", "dir2", "u"]);
    // each hash as 43 base64url characters, not 64 hex digits
    expect(JSON.stringify(line)).not.toContain(hash("a"));
  });

  it("a payload already in its line form, or not a marker's shape, is written as it is", () => {
    for (const payload of [null, "text", [1], { changes: "no" }, { v: 7, changes: [] }]) {
      const { read } = roundTrip(payload);
      expect(read).toEqual(payload);
    }
  });

  it("a marker over 20,000 paths compacts the same in time slices, letting the event loop turn", async () => {
    const paths = Array.from({ length: 20_000 }, (_, i) => `src/part ${i % 41}/file-${i}.ts`);
    const changes: unknown[] = paths.map((path) => ({ path, action: "restore" }));
    delete changes[7]; // a hole stays a hole, as in a map
    const payload = {
      targetSequence: 2,
      mode: "files",
      filesRestored: paths.length,
      filesDeleted: 0,
      skipped: paths.slice(0, 3),
      changes,
      eventsRemoved: 0,
      blobsPruned: 0,
      undo: {
        workspace: "/w",
        files: paths.map((path, i) => ({ path, kind: "blob", blob: hash(String(i % 9)), bytes: i, mode: 0o644 })),
      },
      wrote: { workspace: "/w", files: paths.map((path) => ({ path, kind: "absent" })) },
    };
    const { result: sliced, tookMs: took, turns } = await withTimerTurns(() => compactRewindPayloadSliced(payload));
    expect(sliced).toStrictEqual(compactRewindPayload(payload));
    expect(took).toBeGreaterThan(4 * SLICE_MS);
    expect(turns).toBeGreaterThan(0);
  });
});
