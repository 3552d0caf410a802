import { beforeEach, describe, expect, it } from "vitest";
import type { StorageBackend } from "../backend/types.js";
import { blob, event, expectCode, range, readAll, record, withLock } from "./fixtures.js";
import { expectSameReads } from "./recovery.js";
import { runAreas, type BackendConformanceOptions, type ConformanceArea, type ConformanceSuite } from "./suite.js";

/**
 * The event log: reading (ranges, early exit, abort), appending and truncating under the lock, and
 * the optional readEventBatches.
 */
export const logArea: ConformanceArea = (suite) => {
  describe("reading the log", () => {
    readingEvents(suite);
    readingErrorsAndLastEvent(suite);
  });

  describe("writing under the lock", () => {
    appending(suite);
    truncating(suite);
    truncatingAlone(suite);
  });

  suite.describeNeeding(["readEventBatches"], "readEventBatches (optional) agrees with readEvents", () =>
    readingInBatches(suite),
  );
};

/** Registers (with vitest) the log area of the conformance suite alone; `runBackendConformance` runs every area. */
export function runLogConformance(options: BackendConformanceOptions): void {
  runAreas(options, [logArea]);
}

/** readEvents: every event, payloads intact, the range bounds, an early break. */
function readingEvents(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  it("readEvents yields every event in sequence order, equal to what was written", async () => {
    const written = [1, 2, 3, 4, 5].map((n) => event("s1", n));
    await backend.createSession(record("s1"), written.slice(0, 2));
    await withLock(backend, "s1", (locked) => locked.append(written.slice(2), { sync: true }));
    expect(await readAll(backend, "s1")).toEqual(written);
  });

  it("payloads survive the trip: nesting, newlines, quotes, unicode, null", async () => {
    const payload = {
      role: "assistant",
      content: 'line one\nline two\r\n\t"quoted" \\ back\u2028sep 🎉 ✓',
      nested: { list: [1, 2.5, -3, { deep: null }], flag: false, empty: {} },
    };
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", (locked) => locked.append([event("s1", 1, payload)], { sync: true }));
    const [read] = await readAll(backend, "s1");
    expect(read?.payload).toEqual(payload);
  });

  it("readEvents honours fromSequence and toSequence, both inclusive", async () => {
    await backend.createSession(
      record("s1"),
      [1, 2, 3, 4, 5, 6].map((n) => event("s1", n)),
    );
    const sequences = async (bounds: { fromSequence?: number; toSequence?: number }) =>
      (await readAll(backend, "s1", bounds)).map((e) => e.sequence);
    expect(await sequences({ fromSequence: 3 })).toEqual([3, 4, 5, 6]);
    expect(await sequences({ toSequence: 2 })).toEqual([1, 2]);
    expect(await sequences({ fromSequence: 2, toSequence: 4 })).toEqual([2, 3, 4]);
    expect(await sequences({ fromSequence: 4, toSequence: 4 })).toEqual([4]);
    expect(await sequences({ fromSequence: 7 })).toEqual([]);
    expect(await sequences({ fromSequence: 5, toSequence: 2 })).toEqual([]);
  });

  it("breaking out of readEvents early ends the stream, and the log stays usable", async () => {
    await backend.createSession(
      record("s1"),
      [1, 2, 3, 4, 5].map((n) => event("s1", n)),
    );
    const seen: number[] = [];
    for await (const e of backend.readEvents("s1")) {
      seen.push(e.sequence);
      if (e.sequence === 2) break;
    }
    expect(seen).toEqual([1, 2]);

    const iterator = backend.readEvents("s1")[Symbol.asyncIterator]();
    expect((await iterator.next()).value?.sequence).toBe(1);
    await iterator.return?.();
    expect((await iterator.next()).done).toBe(true);

    await withLock(backend, "s1", (locked) => locked.append([event("s1", 6)], { sync: true }));
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
  });
}

/** Unknown sessions and aborted reads; lastEvent; events as values the caller may change. */
function readingErrorsAndLastEvent(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  it("readEvents of an unknown session throws SESSION_NOT_FOUND", async () => {
    await expectCode(readAll(backend, "nobody"), "SESSION_NOT_FOUND");
  });

  it("readEvents with an aborted signal rejects with the signal's reason", async () => {
    await backend.createSession(record("s1"), [event("s1", 1)]);
    const reason = new Error("stop reading");
    const controller = new AbortController();
    controller.abort(reason);
    await expect(readAll(backend, "s1", { signal: controller.signal })).rejects.toBe(reason);
  });

  it("lastEvent is the newest event, follows appends and truncation, and is undefined when empty", async () => {
    await backend.createSession(record("s1"));
    expect(await backend.lastEvent("s1")).toBeUndefined();
    await withLock(backend, "s1", (locked) =>
      locked.append([event("s1", 1), event("s1", 2), event("s1", 3)], { sync: true }),
    );
    expect(await backend.lastEvent("s1")).toEqual(event("s1", 3));
    await withLock(backend, "s1", (locked) => locked.truncateAfter(1));
    expect(await backend.lastEvent("s1")).toEqual(event("s1", 1));
  });

  it("lastEvent of an unknown session throws SESSION_NOT_FOUND", async () => {
    await expectCode(backend.lastEvent("nobody"), "SESSION_NOT_FOUND");
  });

  it("what a caller does with an event after appending or reading it does not change the log", async () => {
    await backend.createSession(record("s1"));
    const written = event("s1", 1, { role: "user", content: "original" });
    await withLock(backend, "s1", (locked) => locked.append([written], { sync: true }));
    (written.payload as { content: string }).content = "changed after append";
    const [first] = await readAll(backend, "s1");
    (first!.payload as { content: string }).content = "changed after read";
    const [again] = await readAll(backend, "s1");
    expect(again?.payload).toEqual({ role: "user", content: "original" });
  });
}

/** append under the lock: lastSequence moves, sequences increase (a gap allowed), a batch all or nothing. */
function appending(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  it("append adds events and moves lastSequence", async () => {
    await backend.createSession(record("s1"));
    await withLock(backend, "s1", async (locked) => {
      await locked.append([event("s1", 1)], { sync: true });
      expect(locked.lastSequence).toBe(1);
      await locked.append([event("s1", 2), event("s1", 3)], { sync: false });
      expect(locked.lastSequence).toBe(3);
      await locked.append([], { sync: true });
      expect(locked.lastSequence).toBe(3);
    });
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2, 3]);
  });

  it("append refuses a sequence that does not increase, with INVALID_ARGUMENT, writing nothing", async () => {
    await backend.createSession(record("s1"), [event("s1", 1), event("s1", 2)]);
    await withLock(backend, "s1", async (locked) => {
      await expectCode(locked.append([event("s1", 2)], { sync: true }), "INVALID_ARGUMENT"); // a repeat
      await expectCode(locked.append([event("s1", 1)], { sync: true }), "INVALID_ARGUMENT"); // going back
      await expectCode(locked.append([event("s1", 2.5)], { sync: true }), "INVALID_ARGUMENT"); // not a whole number
      await expectCode(locked.append([event("s1", 0)], { sync: true }), "INVALID_ARGUMENT");
      expect(locked.lastSequence).toBe(2);
    });
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2]);
  });

  it("append accepts a gap: a rewind marker takes the number after the highest ever written", async () => {
    await backend.createSession(
      record("s1"),
      range(1, 5).map((n) => event("s1", n)),
    );
    await withLock(backend, "s1", async (locked) => {
      await locked.truncateAfter(2);
      await locked.append([event("s1", 6)], { sync: true });
      expect(locked.lastSequence).toBe(6);
      await locked.append([event("s1", 7), event("s1", 9)], { sync: true });
      expect(locked.lastSequence).toBe(9);
    });
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2, 6, 7, 9]);
    expect((await backend.lastEvent("s1"))?.sequence).toBe(9);
  });

  it("append is all or nothing: one out-of-order sequence in a batch writes none of it", async () => {
    await backend.createSession(record("s1"), [event("s1", 1)]);
    await withLock(backend, "s1", async (locked) => {
      await expectCode(
        locked.append([event("s1", 2), event("s1", 3), event("s1", 3)], { sync: true }),
        "INVALID_ARGUMENT",
      );
      await expectCode(
        locked.append([event("s1", 2), event("s1", 4), event("s1", 3)], { sync: false }),
        "INVALID_ARGUMENT",
      );
      expect(locked.lastSequence).toBe(1);
      await locked.append([event("s1", 2), event("s1", 3)], { sync: true });
      expect(locked.lastSequence).toBe(3);
    });
    expect(await readAll(backend, "s1")).toEqual([event("s1", 1), event("s1", 2), event("s1", 3)]);
  });
}

/** Appends readable without the lock; truncateAfter: what it keeps, at or past the end. */
function truncating(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  it("appends made under the lock are readable without it, before and after release", async () => {
    await backend.createSession(record("s1"));
    const locked = await backend.lock("s1");
    await locked.append([event("s1", 1)], { sync: true });
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1]);
    expect((await backend.lastEvent("s1"))?.sequence).toBe(1);
    await locked.release();
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1]);
  });

  it("truncateAfter keeps the events through the given sequence and moves lastSequence back", async () => {
    await backend.createSession(
      record("s1"),
      range(1, 6).map((n) => event("s1", n)),
    );
    await withLock(backend, "s1", async (locked) => {
      await locked.truncateAfter(4);
      expect(locked.lastSequence).toBe(4);
      await locked.append([event("s1", 5, { role: "user", content: "after truncation" })], { sync: true });
      expect(locked.lastSequence).toBe(5);
    });
    const events = await readAll(backend, "s1");
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(events[4]?.payload).toEqual({ role: "user", content: "after truncation" });
  });

  it("truncateAfter at or past the end changes nothing; truncateAfter(0) empties the log", async () => {
    const events = range(1, 3).map((n) => event("s1", n));
    await backend.createSession(record("s1"), events);
    await withLock(backend, "s1", async (locked) => {
      await locked.truncateAfter(3);
      await locked.truncateAfter(99);
      expect(locked.lastSequence).toBe(3);
    });
    expect(await readAll(backend, "s1")).toEqual(events);
    await withLock(backend, "s1", async (locked) => {
      await locked.truncateAfter(0);
      expect(locked.lastSequence).toBe(0);
    });
    expect(await readAll(backend, "s1")).toEqual([]);
    expect(await backend.lastEvent("s1")).toBeUndefined();
  });
}

/** truncateAfter into a gap, leaving blobs and records; a lock writes only its own session. */
function truncatingAlone(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  it("truncateAfter into a gap between sequences keeps the events below it", async () => {
    // A rewind marker leaves a gap below it, and a fork copies its parent's sequences, gaps included.
    await backend.createSession(
      record("s1"),
      [1, 2, 3, 7, 8].map((n) => event("s1", n)),
    );
    await withLock(backend, "s1", async (locked) => {
      expect(locked.lastSequence).toBe(8);
      await locked.truncateAfter(5);
      expect(locked.lastSequence).toBe(3);
    });
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2, 3]);
  });

  it("truncation leaves blobs and records alone", async () => {
    const a = blob("survives");
    await backend.createSession(
      record("s1"),
      range(1, 3).map((n) => event("s1", n)),
    );
    await withLock(backend, "s1", async (locked) => {
      await locked.writeBlob(a.hash, a.bytes);
      await locked.writeRecord("intent", { to: 1 });
      await locked.truncateAfter(1);
    });
    expect(await backend.listBlobs("s1")).toEqual([a.hash]);
    expect(await backend.readRecord("s1", "intent")).toEqual({ to: 1 });
  });

  it("the lock's writes reach only its own session", async () => {
    await backend.createSession(record("s1"));
    await backend.createSession(record("s2"), [event("s2", 1)]);
    await withLock(backend, "s1", async (locked) => {
      await locked.append([event("s1", 1), event("s1", 2)], { sync: true });
      await locked.writeRecord("only-here", true);
      await locked.truncateAfter(0);
    });
    expect(await readAll(backend, "s2")).toEqual([event("s2", 1)]);
    expect(await backend.listRecords("s2")).toEqual([]);
  });
}

/** readEventBatches, where a backend has it: what readEvents yields, in batches, and failing as it fails. */
function readingInBatches(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  suite.withOptional(
    "readEventBatches",
    "readEventBatches yields, flattened, exactly what readEvents yields, for every range, across many batches",
    async () => {
      // Gaps (a rewind's) and enough bytes to span several chunks of a streaming reader.
      const sequences = [...range(1, 300), ...range(310, 600)];
      const big = "x".repeat(300);
      await backend.createSession(
        record("s1"),
        sequences.map((n) => event("s1", n, { role: "user", content: `${n} ${big}` })),
      );
      for (const bounds of [
        {},
        { fromSequence: 2 },
        { toSequence: 3 },
        { fromSequence: 150, toSequence: 450 },
        { fromSequence: 305, toSequence: 309 },
        { fromSequence: 305 },
        { fromSequence: 601 },
        { fromSequence: 5, toSequence: 2 },
      ])
        await expectSameReads(backend, "s1", bounds);
      let batches = 0;
      for await (const batch of backend.readEventBatches!("s1")) {
        expect(batch.length).toBeGreaterThan(0);
        batches++;
      }
      expect(batches).toBeGreaterThan(0);
    },
  );

  suite.withOptional("readEventBatches", "readEventBatches of an empty log yields nothing", async () => {
    await backend.createSession(record("s1"));
    await expectSameReads(backend, "s1", {});
  });

  suite.withOptional(
    "readEventBatches",
    "readEventBatches fails as readEvents does: SESSION_NOT_FOUND, and an aborted signal's reason",
    async () => {
      const drain = async (source: AsyncIterable<unknown>) => {
        for await (const _ of source);
      };
      await expectCode(drain(backend.readEventBatches!("nobody")), "SESSION_NOT_FOUND");
      await backend.createSession(record("s1"), [event("s1", 1)]);
      const reason = new Error("stop reading");
      const controller = new AbortController();
      controller.abort(reason);
      await expect(drain(backend.readEventBatches!("s1", { signal: controller.signal }))).rejects.toBe(reason);
    },
  );

  suite.withOptional(
    "readEventBatches",
    "readEventBatches after truncation and appends yields the log as it is now",
    async () => {
      await backend.createSession(
        record("s1"),
        range(1, 5).map((n) => event("s1", n)),
      );
      await withLock(backend, "s1", async (locked) => {
        await locked.truncateAfter(2);
        await locked.append([event("s1", 6), event("s1", 7)], { sync: true });
      });
      await expectSameReads(backend, "s1", {});
      const flat: number[] = [];
      for await (const batch of backend.readEventBatches!("s1")) flat.push(...batch.map((e) => e.sequence));
      expect(flat).toEqual([1, 2, 6, 7]);
    },
  );
}
