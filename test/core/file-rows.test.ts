import { copyFile, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseEventLine, serializeEvent } from "../../src/core/envelope.js";
import { ROWS_VERSION, compactPayload, compactPayloadSliced } from "../../src/core/file-rows.js";
import { SLICE_MS } from "../../src/core/time-slices.js";
import { RewindPayload, type StoredEvent } from "../../src/core/events.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { withTimerTurns } from "../helpers/timer-turns.js";

/** A rewind and its undo, written by the version before the compact form (docs/format.md, "Payloads as rows"). */
const V1_LOG = join(import.meta.dirname, "../rewind/fixtures/rewind-records-v1.jsonl");
const V1_SESSION = "01M8VCBYAB1ZAK0NSMAJSK02NA";
/** A checkpoint, a rewind and its undo written by the version before prefix-coded paths (markers at `v` 2). */
const V2_LOG = join(import.meta.dirname, "../rewind/fixtures/rewind-records-v2.jsonl");
/** What that version's store read from V2_LOG: the same log must read the same now. */
const V2_READ = join(import.meta.dirname, "../rewind/fixtures/rewind-records-v2.read.json");

const hash = (c: string) => c.repeat(64);

function marker(payload: unknown, type = "session_rewind"): StoredEvent {
  return { v: 1, id: "m", sessionId: "s", sequence: 9, type, createdAt: "t", payload };
}

/** The payload once written as a line and read back. */
function roundTrip(payload: unknown, type = "session_rewind"): { line: Record<string, unknown>; read: unknown } {
  const text = serializeEvent(marker(payload, type));
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

  it("markers of the form before prefix-coded paths (v 2) read as that version read them, by a store too", async () => {
    const lines = (await readFile(V2_LOG, "utf8")).split("\n").filter((l) => l !== "");
    const expected = JSON.parse(await readFile(V2_READ, "utf8")) as {
      sessionId: string;
      events: { sequence: number; type: string; payload: unknown }[];
    };
    const markers = lines.filter((l) => JSON.parse(l).type === "session_rewind");
    expect(markers.map((l) => JSON.parse(l).payload.v)).toEqual([2, 2]);
    const root = await tempDir();
    await mkdir(join(root, expected.sessionId));
    await copyFile(V2_LOG, join(root, expected.sessionId, "events.jsonl"));
    const read = await openStore({ root }).readAll(expected.sessionId);
    expect(read.map(({ sequence, type, payload }) => ({ sequence, type, payload }))).toEqual(expected.events);
    for (const event of read.filter((e) => e.type === "session_rewind"))
      expect(RewindPayload.safeParse(event.payload).success).toBe(true);
  });

  it("a checkpoint and a file-states payload are written as rows, each path once and by what it adds", () => {
    const files = [
      { path: "src/deep/a.ts", kind: "blob", blob: hash("a"), bytes: 3, mode: 0o644, uid: 0, gid: 0 },
      { path: "src/deep/b.ts", kind: "absent" },
      { path: "src/deep/er/c.ts", kind: "symlink", target: "../a.ts" },
      { path: "src/deep", kind: "directory", mode: 0o755, complete: true },
      { path: "big.bin", kind: "skipped", reason: "too_large", detail: "9 MB" },
      { path: "odd", kind: "blob", blob: hash("b"), bytes: 1, mode: 0o644, extra: 1 },
    ];
    const checkpoint = { tool: "bash", workspace: "/w", files, callId: "c1" };
    const { line, read } = roundTrip(checkpoint, "session_checkpoint");
    expect(read).toEqual(checkpoint);
    expect(line.v).toBe(ROWS_VERSION);
    expect(line.paths).toEqual(["src/deep/a.ts", "b.ts", "er/c.ts", "", "big.bin"]);
    expect(line.shared).toEqual([0, 9, 9, 8, 0]);
    expect(line.files).toEqual([
      ["blob", 0, Buffer.from(hash("a"), "hex").toString("base64url"), 3, 0o644, 0, 0],
      ["absent", 1],
      ["symlink", 2, "../a.ts"],
      ["directory", 3, 0o755, true],
      ["skipped", 4, "too_large", "9 MB"],
      files[5], // a key the rows do not know: kept as the object it is
    ]);
    const states = {
      workspace: "/w",
      tool: "edit",
      files: [
        { path: "src/a.ts", kind: "file", sha256: hash("c"), mode: 0o644 },
        { path: "src/b.ts", kind: "unknown", reason: "EACCES" },
      ],
    };
    const back = roundTrip(states, "session_file_states");
    expect(back.read).toEqual(states);
    expect(back.line.files).toEqual([
      ["file", 0, Buffer.from(hash("c"), "hex").toString("base64url"), 0o644],
      ["unknown", 1, "EACCES"],
    ]);
  });

  it("a path table never splits a character made of two UTF-16 units, and reads back whole", () => {
    const files = ["d/\u{1F600}a", "d/\u{1F601}b", "d/\u{1F601}c"].map((path) => ({ path, kind: "absent" }));
    const { line, read } = roundTrip({ tool: "t", workspace: "/w", files }, "session_checkpoint");
    expect(read).toEqual({ tool: "t", workspace: "/w", files });
    // the two emoji share their first unit; the table keeps "d/" only, then the whole emoji
    expect(line.shared).toEqual([0, 2, 4]);
  });

  it("a payload with a v, paths or shared of its own is written whole and reads back the same", () => {
    const given = [
      { v: 3, paths: ["a"], shared: [0], files: [["absent", 0]], workspace: "/w" },
      { workspace: "/w", files: [], paths: "mine" },
      { workspace: "/w", files: [], shared: true },
      // a marker's shape with a key of the same name as the table's: before, the table took its place
      {
        ...{ targetSequence: 1, mode: "files", filesRestored: 0, filesDeleted: 1, skipped: [], eventsRemoved: 0 },
        ...{ blobsPruned: 0, changes: [{ path: "a", action: "delete" }], paths: ["mine"] },
      },
    ];
    const types = ["session_file_states", "session_rewind"];
    for (const type of types) for (const payload of given) expect(roundTrip(payload, type).read).toEqual(payload);
    for (const type of types)
      for (const payload of given) expect(roundTrip(payload, type).line).toEqual({ v: 0, as: payload });
  });

  it("an old marker written again takes the compact form and reads back the same", async () => {
    const lines = (await readFile(V1_LOG, "utf8")).split("\n").filter((l) => l !== "");
    for (const text of lines.filter((l) => JSON.parse(l).type === "session_rewind")) {
      const payload = JSON.parse(text).payload;
      const { line, read } = roundTrip(payload);
      expect(line.v).toBe(ROWS_VERSION);
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
    const {
      result: sliced,
      tookMs: took,
      turns,
    } = await withTimerTurns(() => compactPayloadSliced("session_rewind", payload));
    expect(sliced).toStrictEqual(compactPayload("session_rewind", payload));
    expect(took).toBeGreaterThan(4 * SLICE_MS);
    expect(turns).toBeGreaterThan(0);
  });
});
