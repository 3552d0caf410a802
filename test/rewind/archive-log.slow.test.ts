// A rewind keeps the part of the log it cuts as a copy of those bytes (records/rewind-archive-<marker>.jsonl),
// never as parsed events in its intent (docs/ARCHITECTURE.md, "Blobs", archives). These tests hold
// the copy to the log byte for byte, the undo to putting back exactly it, and every reader of archives (undo,
// verify, gc, roll-back) to refusing one that was altered.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gc, isAgentTapeError, rewind, undoRewind, verify } from "../../src/index.js";
import { fsBackend } from "../../src/backend/index.js";
import type { StorageBackend } from "../../src/backend/types.js";
import type { RewindPayload, StoredEvent } from "../../src/core/events.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { archivedEventsOf } from "../helpers/stored-events.js";
import { expectRejection } from "../helpers/expect-rejection.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { rounds } from "../helpers/rounds.js";

const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });
const AWKWARD = 'héllo wörld 😀 中文 \u2028\u2029 \u0000 "quoted" \\ back \ud83d\ude00 e\u0301';

// The big event's size: past two of the 256 KiB chunks the copy and the undo's read go by
// (src/backend/fs/archive-log.ts), so one line starts in one chunk, fills the next and ends in a third;
// 2.5 MB (ten chunks) when soaking.
const BIG = rounds(600_000, 2_500_000);

/**
 * A tape whose cut part holds what a byte copy could get wrong: multi-byte characters, a line separator
 * JSON keeps, an event spanning several copy chunks, and an appendMany batch (lines carrying marks).
 */
async function awkwardTape(backend?: (root: string) => StorageBackend) {
  const root = await tempDir("agent-tape-archive-log-");
  const store = openStore(backend ? { backend: backend(root) } : { root });
  const { id } = await store.create({ title: "archive log" });
  await store.append(id, say("start"));
  const batchStart = (await store.append(id, say("before the batch"))).sequence + 1;
  await store.appendMany(id, [say(`one ${AWKWARD}`), say("two"), say(`three ${"é".repeat(1000)}`)]);
  await store.append(id, say(`big ${"x".repeat(BIG)} ${AWKWARD}`));
  await store.append(id, { type: "tool_call", payload: { callId: "c1", name: "edit", input: { text: AWKWARD } } });
  await store.append(id, say("last"));
  return { root, store, id, batchStart, log: join(root, id, "events.jsonl") };
}

/** The log's lines as bytes, each with the sequence it carries. */
function linesOf(bytes: Buffer): { sequence: number; bytes: Buffer }[] {
  const out: { sequence: number; bytes: Buffer }[] = [];
  for (let start = 0; start < bytes.length; ) {
    const end = bytes.indexOf(0x0a, start) + 1;
    const line = bytes.subarray(start, end);
    out.push({ sequence: JSON.parse(line.toString("utf8")).sequence as number, bytes: line });
    start = end;
  }
  return out;
}

/** A line without what an undo may change: its number and its batch mark. */
const unnumbered = (line: Buffer) => line.toString("utf8").replace(/"sequence":\d+,("batch":\[\d+,\d+\],)?/, "");

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return isAgentTapeError(error) ? error.code : `not a typed error: ${String(error)}`;
}

describe.each([
  { where: "after a single event", target: (t: { batchStart: number }) => t.batchStart - 1 },
  { where: "inside an appendMany batch", target: (t: { batchStart: number }) => t.batchStart + 1 },
])("a rewind that cuts $where, keepUndo 1", ({ target: targetOf }) => {
  it("copies the cut part of the log byte for byte, and the undo puts back the same lines", async () => {
    const t = await awkwardTape();
    const target = targetOf(t);
    const before = await readFile(t.log);
    const cutLines = linesOf(before).filter((l) => l.sequence > target);
    let intentBytes = 0;
    const report = await rewind(t.store, t.id, {
      toSequence: target,
      mode: "conversation",
      onProgress: (step) => {
        if (step === "intent-written") intentBytes = Buffer.byteLength(readIntent(t.root, t.id));
      },
    });
    const marker = report.markerSequence!;
    const name = `rewind-archive-${marker}`;

    // The copy is the log's own bytes from the first cut line on; the intent never held the events.
    const copy = await readFile(join(t.root, t.id, "records", `${name}.jsonl`));
    expect(copy.equals(Buffer.concat(cutLines.map((l) => l.bytes)))).toBe(true);
    expect(intentBytes).toBeGreaterThan(0);
    expect(intentBytes).toBeLessThan(16 * 1024);
    const record = (await t.store.backend.readRecord(t.id, name)) as Record<string, unknown>;
    expect(Object.keys(record).sort()).toEqual(["log", "markerSequence"]);
    const rewound = (await t.store.readAll(t.id)).at(-1)!.payload as RewindPayload;
    expect(rewound.undo?.archiveLog).toEqual(record.log);
    expect(rewound.undo?.archiveLog?.events).toBe(cutLines.length);

    const undone = await undoRewind(t.store, t.id);

    expect(undone.eventsRestored).toBe(cutLines.length);
    const after = linesOf(await readFile(t.log));
    const restored = after.filter((l) => l.sequence > marker && l.sequence < undone.markerSequence!);
    expect(restored.map((l) => unnumbered(l.bytes))).toEqual(cutLines.map((l) => unnumbered(l.bytes)));
    expect(restored.map((l) => l.sequence)).toEqual(cutLines.map((_, i) => marker + 1 + i));
    const undoMarker = (await t.store.readAll(t.id)).at(-1)!;
    // The cut is one stretch of numbers, so the marker records one run of them.
    expect(cutLines.map((l) => l.sequence)).toEqual(cutLines.map((_, i) => target + 1 + i));
    expect((undoMarker.payload as RewindPayload).reappendedRanges).toEqual([[target + 1, cutLines.at(-1)!.sequence]]);
    // The kept part is as it was, the archive and its copy are gone with the undo.
    expect(after.filter((l) => l.sequence <= target).map((l) => unnumbered(l.bytes))).toEqual(
      linesOf(before)
        .filter((l) => l.sequence <= target)
        .map((l) => unnumbered(l.bytes)),
    );
    expect(await recordFiles(t.root, t.id)).toEqual([]);
  });
});

describe("an altered byte-range archive is refused", () => {
  async function rewound() {
    const t = await awkwardTape();
    const report = await rewind(t.store, t.id, { toSequence: t.batchStart - 1, mode: "conversation" });
    const name = `rewind-archive-${report.markerSequence}`;
    const copy = join(t.root, t.id, "records", `${name}.jsonl`);
    return { ...t, name, copy, logBefore: await readFile(t.log) };
  }

  async function expectRefusedAndUnchanged(t: Awaited<ReturnType<typeof rewound>>): Promise<void> {
    const records = await recordFiles(t.root, t.id);
    expect(await codeOf(undoRewind(t.store, t.id))).toBe("STORE_TAMPERED");
    expect((await readFile(t.log)).equals(t.logBefore)).toBe(true);
    expect(await recordFiles(t.root, t.id)).toEqual(records);
  }

  it("one byte of its copy changed: undo STORE_TAMPERED, verify names the archive, nothing changes", async () => {
    const t = await rewound();
    const bytes = await readFile(t.copy);
    const at = bytes.indexOf("two");
    bytes[at] = "T".charCodeAt(0);
    await writeFile(t.copy, bytes);

    await expectRefusedAndUnchanged(t);
    const report = await verify(t.store, t.id);
    expect(report.problems).toEqual([
      expect.objectContaining({ kind: "record_malformed", record: t.name, message: expect.stringMatching(/sha256/) }),
    ]);
  });

  it("its copy cut short, or gone: STORE_TAMPERED", async () => {
    const t = await rewound();
    const bytes = await readFile(t.copy);
    await writeFile(t.copy, bytes.subarray(0, bytes.length - 10));
    await expectRefusedAndUnchanged(t);
    await rm(t.copy);
    await expectRefusedAndUnchanged(t);
  });

  it("a planted copy with a record to match: the marker in the log names other bytes, STORE_TAMPERED", async () => {
    const t = await rewound();
    const line = {
      v: 1,
      id: "x",
      sessionId: t.id,
      sequence: t.batchStart,
      type: "message",
      createdAt: "2025-01-01T00:00:00.000Z",
      payload: { role: "user", content: "planted" },
    };
    const planted = Buffer.from(`${JSON.stringify(line)}\n`);
    await writeFile(t.copy, planted);
    const log = { bytes: planted.length, sha256: createHash("sha256").update(planted).digest("hex"), events: 1 };
    const record = (await t.store.backend.readRecord(t.id, t.name)) as { markerSequence: number };
    await lockedAccess(t.store).withLockedSession(t.id, (locked) => locked.writeRecord(t.name, { ...record, log }));
    t.logBefore = await readFile(t.log);

    await expectRefusedAndUnchanged(t);
    expect(await verify(t.store, t.id)).toMatchObject({ ok: true }); // the pair agrees: only the marker knows
  });

  it("altered after the undo's intent was written: rolled back (REWIND_FAILED), the log as before", async () => {
    const t = await rewound();
    const error = await expectRejection(
      undoRewind(t.store, t.id, {
        onProgress: (step) => {
          if (step !== "intent-written") return;
          const bytes = readFileSync(t.copy);
          bytes[bytes.indexOf("two")] = "T".charCodeAt(0);
          writeFileSync(t.copy, bytes);
        },
      }),
      "REWIND_FAILED",
    );

    expect(error.rolledBack).toBe(true);
    expect(isAgentTapeError(error.cause, "STORE_TAMPERED")).toBe(true);
    expect((await readFile(t.log)).equals(t.logBefore)).toBe(true);
    expect(await t.store.backend.listRecords(t.id)).not.toContain("rewind-intent");
  });

  it("an undo intent that would put back another archive's events: STORE_TAMPERED for the next writer", async () => {
    const t = await rewound();
    const marker = (await t.store.readAll(t.id)).at(-1)!;
    const log = (marker.payload as RewindPayload).undo!.archiveLog!;
    const undoMarker: StoredEvent = {
      ...marker,
      id: "planted",
      sequence: marker.sequence + log.events + 2, // one more than the archive holds
      payload: { ...(marker.payload as RewindPayload), undoOf: marker.sequence, eventsRemoved: 0 },
    };
    const intent = {
      kind: "undo",
      markerSequence: undoMarker.sequence,
      files: [],
      truncateTo: marker.sequence,
      append: [undoMarker],
      dropArchives: [t.name],
      prune: false,
      before: [],
      reappend: { archive: t.name, log, first: marker.sequence + 1 },
    };
    await writeFile(join(t.root, t.id, "records", "rewind-intent.json"), JSON.stringify(intent));

    await t.store.close(); // recovery runs when the lock is taken: by a store that does not hold it yet
    const next = openStore({ root: t.root });
    const error = await next.append(t.id, say("next")).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "STORE_TAMPERED")).toBe(true);
    expect((error as Error).message).toMatch(/puts back events that are not the archive of the rewind it undoes/);
    expect((await readFile(t.log)).equals(t.logBefore)).toBe(true);
  });
});

describe("byte-range archives and the rest of the store", () => {
  it("a rewind that fails once the cut part is copied is rolled back, and leaves no copy", async () => {
    const t = await awkwardTape();
    const before = await readFile(t.log);
    const error = await expectRejection(
      rewind(t.store, t.id, {
        toSequence: 2,
        mode: "conversation",
        onProgress: (step) => {
          if (step === "log-archived") throw new Error("stop here");
        },
      }),
      "REWIND_FAILED",
    );

    expect(error.rolledBack).toBe(true);
    expect((await readFile(t.log)).equals(before)).toBe(true);
    expect(await recordFiles(t.root, t.id)).toEqual([]);
  });

  it("a copy found cut short once the log is cut (a power loss): the rewind completes, without its undo", async () => {
    const t = await awkwardTape();
    const copyOf = (marker: number) => join(t.root, t.id, "records", `rewind-archive-${marker}.jsonl`);
    const lastBefore = (await t.store.head(t.id))!;
    let once = true;
    const report = await rewind(t.store, t.id, {
      toSequence: 2,
      mode: "conversation",
      onProgress: (step) => {
        if (step !== "log-truncated" || !once) return;
        once = false;
        // What a power loss can leave of a copy that was never fsynced: its first lines only.
        const bytes = readFileSync(copyOf(lastBefore + 1));
        writeFileSync(copyOf(lastBefore + 1), bytes.subarray(0, bytes.indexOf(0x0a) + 1));
        throw new Error("interrupted once the log is cut"); // finished, not rolled back: the log is cut
      },
    });

    expect(report.eventsRemoved).toBe(lastBefore - 2);
    expect((await t.store.readAll(t.id)).map((e) => e.sequence)).toEqual([1, 2, lastBefore + 1]);
    const marker = (await t.store.readAll(t.id)).at(-1)!.payload as RewindPayload;
    expect(marker.undo?.archive).toBeUndefined();
    expect(await recordFiles(t.root, t.id)).toEqual([]);
    expect(await codeOf(undoRewind(t.store, t.id))).toBe("NOTHING_TO_UNDO");
  });

  it("an expired archive goes with its copy, by the next rewind and by gc, which counts the copy's bytes", async () => {
    const t = await awkwardTape();
    const first = await rewind(t.store, t.id, { toSequence: 6, mode: "conversation", keepUndo: 2 });
    await t.store.append(t.id, say("again"));
    const second = await rewind(t.store, t.id, { toSequence: 4, mode: "conversation", keepUndo: 2 });
    const names = [first, second].map((r) => `rewind-archive-${r.markerSequence}`);
    expect(await recordFiles(t.root, t.id)).toEqual(names.flatMap((n) => [`${n}.json`, `${n}.jsonl`]).sort());

    const firstCopy = (await readFile(join(t.root, t.id, "records", `${names[0]}.jsonl`))).length;
    const dry = await gc(t.store, { sessionIds: [t.id], dryRun: true });
    expect(dry.sessions[0]!.expiredArchives).toEqual([names[0]]);
    expect(dry.bytesFreed).toBeGreaterThan(firstCopy);
    await gc(t.store, { sessionIds: [t.id] });
    expect(await recordFiles(t.root, t.id)).toEqual([`${names[1]}.json`, `${names[1]}.jsonl`]);

    await t.store.append(t.id, say("and again"));
    await rewind(t.store, t.id, { toSequence: 2, mode: "conversation" }); // keepUndo 1 drops the one left
    const left = await recordFiles(t.root, t.id);
    expect(left).toHaveLength(2);
    expect(left.some((n) => n.startsWith(names[1]!))).toBe(false);
    expect((await verify(t.store, t.id)).ok).toBe(true);
  });

  it("an archive of the events, as versions before byte ranges wrote it, is still undone", async () => {
    // A backend without the byte-range calls takes the path every rewind took before them: the events in
    // the intent, then in the archive record (no .jsonl copy).
    const t = await awkwardTape((root) => withoutByteRanges(fsBackend({ root })));
    const eventsBefore = await t.store.readAll(t.id);
    const report = await rewind(t.store, t.id, { toSequence: 2, mode: "conversation" });
    const name = `rewind-archive-${report.markerSequence}`;
    expect(await recordFiles(t.root, t.id)).toEqual([`${name}.json`]);
    const record = (await t.store.backend.readRecord(t.id, name)) as { events: StoredEvent[] };
    expect(record.events).toHaveLength(eventsBefore.length - 2);
    await t.store.close();

    const store = openStore({ root: t.root });
    expect(await archivedEventsOf(store.backend, t.id, name)).toEqual(eventsBefore.slice(2));
    const undone = await undoRewind(store, t.id);
    expect(undone.eventsRestored).toBe(eventsBefore.length - 2);
    const restored = (await store.readAll(t.id)).slice(3, -1);
    expect(restored.map(({ sequence: _s, ...rest }) => rest)).toEqual(
      eventsBefore.slice(2).map(({ sequence: _s, ...rest }) => rest),
    );
    expect(await recordFiles(t.root, t.id)).toEqual([]);
  });
});

describe("an intent written before byte-range archives", () => {
  it("left by a crash once written: the next writer finishes it, and its archive of events is undone", async () => {
    // The old path (a backend without byte-range calls) writes the intent with the cut events in it. Its bytes,
    // and the log as it was, are put back after the rewind: the state a crash right after the intent leaves.
    const t = await awkwardTape((root) => withoutByteRanges(fsBackend({ root })));
    const eventsBefore = await t.store.readAll(t.id);
    const logBefore = await readFile(t.log);
    let intent = "";
    const report = await rewind(t.store, t.id, {
      toSequence: 2,
      mode: "conversation",
      onProgress: (step) => {
        if (step === "intent-written") intent = readIntent(t.root, t.id);
      },
    });
    await t.store.close();
    expect(JSON.parse(intent).archive.events).toHaveLength(eventsBefore.length - 2);
    const name = `rewind-archive-${report.markerSequence}`;
    await rm(join(t.root, t.id, "records", `${name}.json`));
    await writeFile(t.log, logBefore);
    await writeFile(join(t.root, t.id, "records", "rewind-intent.json"), intent);

    const store = openStore({ root: t.root });
    // The undo takes the lock: recovery finishes the rewind first (the old way), then it is undone.
    const undone = await undoRewind(store, t.id);
    expect(undone.undoneMarker).toBe(report.markerSequence);
    expect(undone.eventsRestored).toBe(eventsBefore.length - 2);
    const after = await store.readAll(t.id);
    expect(after.slice(3, -1).map(({ sequence: _s, ...rest }) => rest)).toEqual(
      eventsBefore.slice(2).map(({ sequence: _s, ...rest }) => rest),
    );
    expect(await recordFiles(t.root, t.id)).toEqual([]);
    expect((await verify(store, t.id)).ok).toBe(true);
  });
});

function readIntent(root: string, id: string): string {
  return readFileSync(join(root, id, "records", "rewind-intent.json"), "utf8");
}

/** The files in the session's records/ folder, the lock holder's in-flight note left out. */
async function recordFiles(root: string, id: string): Promise<string[]> {
  const names = await readdir(join(root, id, "records")).catch(() => [] as string[]);
  return names.filter((n) => !n.startsWith("blobs-in-flight")).sort();
}

/** The backend as one without `archiveLogAfter`, `appendStream` and `readArchivedLog` would be. */
function withoutByteRanges(backend: StorageBackend): StorageBackend {
  const hidden = new Set<PropertyKey>(["archiveLogAfter", "appendStream", "readArchivedLog"]);
  const hide = <T extends object>(target: T, wrap: (key: PropertyKey, value: unknown) => unknown): T =>
    new Proxy(target, {
      get(object, key) {
        if (hidden.has(key)) return undefined;
        const value = Reflect.get(object, key, object);
        return typeof value === "function" ? wrap(key, value.bind(object)) : value;
      },
    });
  return hide(backend, (key, method) =>
    key === "lock"
      ? async (...args: unknown[]) =>
          hide(await (method as (...a: unknown[]) => Promise<object>)(...args), (_k, m) => m)
      : method,
  );
}
