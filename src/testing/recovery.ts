import { beforeEach, describe, expect, it } from "vitest";
import type { CorruptLine, ReadEventsOptions, StorageBackend } from "../backend/types.js";
import type { StoredEvent } from "../core/events.js";
import { isAgentTapeError, rewind, SessionStore, undoRewind } from "../index.js";
import {
  BLOBS_IN_FLIGHT_RECORD,
  blob,
  checkpoint,
  event,
  expectCode,
  REWIND_INTENT_RECORD,
  range,
  readAll,
  record,
  withLock,
} from "./fixtures.js";
import { runAreas, type BackendConformanceOptions, type ConformanceArea, type ConformanceSuite } from "./suite.js";
import { editSession, folderTree, useWorkspaces } from "./workspace.js";

const TORN = '{"v":1,"id":"torn","sessionId":"s1","seq';

/**
 * What a crash leaves behind, and what the next holder makes of it: a torn or corrupt log line,
 * half-written blobs, the blobs-in-flight note, a rewind intent. Reading and repairing go through
 * the interface; leaving the damage needs the `crashLeftState` hook.
 */
export const recoveryArea: ConformanceArea = (suite) => {
  suite.describeNeeding(["crashLeftState"], "a log a crash left damaged", () => damagedLog(suite));
  suite.describeNeeding(
    ["crashLeftState", "readEventBatches"],
    "readEventBatches (optional) agrees with readEvents on a damaged log",
    () => damagedLogInBatches(suite),
  );
  describe("blob writes a crash cut short", () => {
    blobWritesCutShort(suite);
    discardingWrites(suite);
  });
  describe("a rewind that fails part-way", () => rewindFailingPartWay(suite));
};

/** A torn last line is left unread and appended past; a corrupt one fails the read, or is reported and skipped. */
function damagedLog(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  suite.withCrashLeftState(
    "a torn last line is not read, lastEvent skips it, and the next holder appends after the last whole event",
    async (crash) => {
      await backend.createSession(
        record("s1"),
        range(1, 3).map((n) => event("s1", n)),
      );
      await crash.appendToLog(backend, "s1", TORN);
      expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2, 3]);
      expect((await backend.lastEvent("s1"))?.sequence).toBe(3);
      await withLock(backend, "s1", async (locked) => {
        expect(locked.lastSequence).toBe(3);
        await locked.append([event("s1", 4)], { sync: true });
      });
      expect(await readAll(backend, "s1")).toEqual(range(1, 4).map((n) => event("s1", n)));
    },
  );

  suite.withCrashLeftState(
    "a corrupt line: LOG_CORRUPT after the events before it; with onCorrupt, reported and skipped",
    async (crash) => {
      await corruptInTheMiddle(backend, crash.appendToLog);
      const seen: number[] = [];
      const error = await expectCode(
        (async () => {
          for await (const e of backend.readEvents("s1")) seen.push(e.sequence);
        })(),
        "LOG_CORRUPT",
      );
      expect(seen).toEqual([1, 2]);
      expect(error.message).toContain("3");
      const reports: CorruptLine[] = [];
      const salvaged = await readAll(backend, "s1", { onCorrupt: (bad) => reports.push(bad) });
      expect(salvaged.map((e) => e.sequence)).toEqual([1, 2, 4, 5]);
      expect(reports).toHaveLength(1);
      expect(reports[0]).toMatchObject({ line: 3, text: "this is no event" });
      expect(reports[0]!.reason.length).toBeGreaterThan(0);
    },
  );
}

/** readEventBatches on a damaged log: the same events, reports and error as readEvents, for every range. */
function damagedLogInBatches(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  suite.withCrashLeftState(
    "a torn last line: the same events, for every range",
    async (crash) => {
      await backend.createSession(
        record("s1"),
        range(1, 6).map((n) => event("s1", n)),
      );
      await crash.appendToLog(backend, "s1", TORN);
      for (const bounds of RANGES) await expectSameReads(backend, "s1", bounds);
    },
    "readEventBatches",
  );

  suite.withCrashLeftState(
    "a corrupt line: the same events before the same LOG_CORRUPT; with onCorrupt, the same events and reports",
    async (crash) => {
      await corruptInTheMiddle(backend, crash.appendToLog);
      for (const bounds of RANGES) {
        await expectSameReads(backend, "s1", bounds);
        await expectSameReads(backend, "s1", bounds, true);
      }
    },
    "readEventBatches",
  );
}

/** A rewind failing after each step: rolled back before the log is cut, finished (and undoable) from then on. */
function rewindFailingPartWay(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  const workspaces = useWorkspaces();
  // Before the log is cut a failed rewind is rolled back; from then on it is finished instead.
  const beforeCut = ["intent-written", "files-restored"] as const;
  const afterCut = ["log-truncated", "blobs-pruned", "marker-appended"] as const;
  for (const step of beforeCut) {
    it(`failing after "${step}": rolled back (REWIND_FAILED), files and log as before, no intent`, async () => {
      const s = await editSession(backend, await workspaces.make(), { lockIdleMs: 0 });
      workspaces.track(s.store);
      const onProgress = (reached: string) => {
        if (reached === step) throw new Error(`failed after ${step}`);
      };
      await expectCode(rewind(s.store, s.id, { toSequence: s.target, onProgress }), "REWIND_FAILED");
      expect(await backend.listRecords(s.id)).not.toContain(REWIND_INTENT_RECORD);
      const next = workspaces.track(new SessionStore({ backend }));
      expect(await next.readAll(s.id)).toEqual(s.eventsAfter);
      expect(await folderTree(s.workspace)).toEqual(s.treeAfter);
    });
  }
  for (const step of afterCut) {
    it(`failing after "${step}": finished as a whole rewind would; it can be undone`, async () => {
      const s = await editSession(backend, await workspaces.make(), { lockIdleMs: 0 });
      workspaces.track(s.store);
      const last = s.eventsAfter.at(-1)!.sequence;
      const onProgress = (reached: string) => {
        if (reached === step) throw new Error(`failed after ${step}`);
      };
      await rewind(s.store, s.id, { toSequence: s.target, onProgress });
      const next = workspaces.track(new SessionStore({ backend }));
      const events = await next.readAll(s.id);
      expect(events.slice(0, -1)).toEqual(s.eventsAfter.filter((e) => e.sequence <= s.target));
      expect(events.at(-1)).toMatchObject({ type: "session_rewind", sequence: last + 1 });
      expect(await folderTree(s.workspace)).toEqual(s.treeAtTarget);
      expect(await backend.listRecords(s.id)).not.toContain(REWIND_INTENT_RECORD);

      await undoRewind(next, s.id);
      expect(await folderTree(s.workspace)).toEqual(s.treeAfter);
    });
  }
}

/** Events 1, 2, a line that is no event, then 4 and 5: damage in the middle, not a torn end. */
async function corruptInTheMiddle(
  backend: StorageBackend,
  appendToLog: (b: StorageBackend, id: string, text: string) => Promise<void>,
) {
  await backend.createSession(record("s1"), [event("s1", 1), event("s1", 2)]);
  let text = "this is no event\n";
  for (const n of [4, 5]) text += `${JSON.stringify(event("s1", n))}\n`;
  await appendToLog(backend, "s1", text);
}

/** Ranges the agreement checks read with: whole log, each bound alone, both, one event, none. */
const RANGES: ReadEventsOptions[] = [
  {},
  { fromSequence: 2 },
  { toSequence: 3 },
  { fromSequence: 2, toSequence: 4 },
  { fromSequence: 4, toSequence: 4 },
  { fromSequence: 9 },
  { fromSequence: 5, toSequence: 2 },
];

/** What one read gave: its events, its onCorrupt reports, and the code it ended with (if it threw). */
interface ReadOutcome {
  events: StoredEvent[];
  reports: CorruptLine[];
  error: string | undefined;
}

async function readOutcome(source: () => AsyncIterable<StoredEvent | StoredEvent[]>): Promise<ReadOutcome> {
  const outcome: ReadOutcome = { events: [], reports: [], error: undefined };
  try {
    for await (const item of source()) {
      if (Array.isArray(item)) outcome.events.push(...item);
      else outcome.events.push(item);
    }
  } catch (error) {
    outcome.error = isAgentTapeError(error) ? error.code : String(error);
  }
  return outcome;
}

/** readEventBatches, flattened, gives what readEvents gives: events, onCorrupt reports, and the error. */
export async function expectSameReads(
  backend: StorageBackend,
  id: string,
  bounds: ReadEventsOptions,
  salvage = false,
): Promise<void> {
  const read = async (batched: boolean) => {
    const reports: CorruptLine[] = [];
    const options: ReadEventsOptions = salvage ? { ...bounds, onCorrupt: (bad) => reports.push(bad) } : bounds;
    const outcome = await readOutcome(() =>
      batched ? backend.readEventBatches!(id, options) : backend.readEvents(id, options),
    );
    return { ...outcome, reports };
  };
  const [single, batched] = [await read(false), await read(true)];
  expect(
    batched,
    `readEventBatches vs readEvents, ${JSON.stringify(bounds)}${salvage ? " with onCorrupt" : ""}`,
  ).toEqual(single);
}

/** Registers (with vitest) the recovery area alone; `runBackendConformance` runs every area. */
export function runRecoveryConformance(options: BackendConformanceOptions): void {
  runAreas(options, [recoveryArea]);
}

/** Blob writes a crash cut short: leftovers discarded, and never a finished blob, even one of the same hash. */
function blobWritesCutShort(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  suite.withCrashLeftState(
    "a half-written blob is no blob: not listed, not read, not there for hasBlob",
    async (crash) => {
      const a = blob("finished");
      const cut = blob("cut short by the crash");
      await backend.createSession(record("s1"));
      await withLock(backend, "s1", (locked) => locked.writeBlob(a.hash, a.bytes));
      await crash.leavePartialBlob(backend, "s1", cut.hash, cut.bytes.slice(0, 5));
      expect(await backend.listBlobs("s1")).toEqual([a.hash]);
      expect(await backend.readBlob("s1", cut.hash)).toBeUndefined();
      await withLock(backend, "s1", async (locked) => {
        expect(await locked.hasBlob(cut.hash)).toBe(false);
        // Written again in full, it is a blob like any other.
        expect(await locked.writeBlob(cut.hash, cut.bytes)).toBe(true);
      });
      expect(await backend.readBlob("s1", cut.hash)).toEqual(Buffer.from(cut.bytes));
    },
  );

  suite.withCrashLeftState(
    "discardPartialWrites (optional) removes every leftover and never a finished blob, even one of the same hash",
    async (crash) => {
      const [a, b] = [blob("finished a"), blob("finished b")];
      const cut = blob("cut short");
      await backend.createSession(record("s1"));
      await withLock(backend, "s1", async (locked) => {
        await locked.writeBlob(a.hash, a.bytes);
        await locked.writeBlob(b.hash, b.bytes);
      });
      await crash.leavePartialBlob(backend, "s1", cut.hash, cut.bytes.slice(0, 3));
      await crash.leavePartialBlob(backend, "s1", a.hash, a.bytes.slice(0, 4)); // a second write of a, cut short
      expect(await crash.countPartialBlobs(backend, "s1")).toBe(2);
      await withLock(backend, "s1", async (locked) => {
        await locked.discardPartialWrites!();
        await locked.discardPartialWrites!();
      });
      expect(await crash.countPartialBlobs(backend, "s1")).toBe(0);
      expect((await backend.listBlobs("s1")).sort()).toEqual([a.hash, b.hash].sort());
      expect(await backend.readBlob("s1", a.hash)).toEqual(Buffer.from(a.bytes));
      expect(await backend.readBlob("s1", b.hash)).toEqual(Buffer.from(b.bytes));
    },
    "discardPartialWrites",
  );
}

/** discardPartialWrites on a clean session; a holder that died mid-write: its unreferenced blobs pruned. */
function discardingWrites(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  suite.withOptional(
    "discardPartialWrites",
    "discardPartialWrites (optional) on a session without leftovers keeps every blob, byte for byte",
    async () => {
      const blobs = [blob("one"), blob("two"), blob("")];
      await backend.createSession(record("s1"));
      await withLock(backend, "s1", async (locked) => {
        for (const x of blobs) await locked.writeBlob(x.hash, x.bytes);
        await locked.discardPartialWrites!();
        for (const x of blobs) expect(await locked.hasBlob(x.hash)).toBe(true);
        await locked.discardPartialWrites!();
      });
      expect((await backend.listBlobs("s1")).sort()).toEqual(blobs.map((x) => x.hash).sort());
      for (const x of blobs) expect(await backend.readBlob("s1", x.hash)).toEqual(Buffer.from(x.bytes));
    },
  );

  it("a holder died writing blobs (note left): the next lock prunes unreferenced blobs, only those", async () => {
    const [kept, orphan] = [blob("referenced by a checkpoint"), blob("written, never referenced")];
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", async (locked) => {
      await locked.writeRecord(BLOBS_IN_FLIGHT_RECORD, { pid: 0, at: "2025-01-01T00:00:00.000Z" });
      await locked.writeBlob(kept.hash, kept.bytes);
      await locked.append([{ ...event("s1", 1), type: "session_checkpoint", payload: checkpoint(kept.hash) }], {
        sync: true,
      });
      await locked.writeBlob(orphan.hash, orphan.bytes);
      // released without removing the note: what a holder killed here leaves
    });
    const store = new SessionStore({ backend });
    try {
      await store.append("s1", { type: "message", payload: { role: "user", content: "after the crash" } });
      expect(await backend.listBlobs("s1")).toEqual([kept.hash]);
      expect(await backend.listRecords("s1")).not.toContain(BLOBS_IN_FLIGHT_RECORD);
    } finally {
      await store.close();
    }
  });
}
