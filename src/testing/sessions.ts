import { randomBytes } from "node:crypto";
import { beforeEach, describe, expect, it } from "vitest";
import type { SessionRecord, StorageBackend } from "../backend/types.js";
import { blob, event, expectCode, range, readAll, record, sha256, withLock } from "./fixtures.js";
import {
  optionalMethodsOf,
  runAreas,
  type BackendConformanceOptions,
  type ConformanceArea,
  type ConformanceSuite,
} from "./suite.js";

/** Sessions: create, get, list, delete, forks' blobs, and the optional sizeOf. */
export const sessionsArea: ConformanceArea = (suite) => {
  describe("sessions", () => {
    sessionsCreated(suite);
    unsafeIdsRefused(suite);
    sessionsForkedListedDeleted(suite);
    sessionsMadeAgain(suite);
  });

  describe("optional methods", () => {
    optionalMethods(suite);
  });
};

/**
 * Registers (with vitest) the sessions area of the conformance suite alone;
 * `runBackendConformance` runs every area.
 */
export function runSessionConformance(options: BackendConformanceOptions): void {
  runAreas(options, [sessionsArea]);
}

/** Sessions created, read back, and refused when taken or unsafe. */
function sessionsCreated(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });
  it("createSession stores the record, which getSession returns as given", async () => {
    const record: SessionRecord = {
      id: "s1",
      createdAt: "2025-01-01T00:00:00.000Z",
      title: "a title — with ünïcode",
      workspace: "/work/space",
      parent: { id: "p0", atSequence: 4 },
    };
    await backend.createSession(record);
    expect(await backend.getSession("s1")).toEqual(record);
    await backend.createSession({ id: "s2", createdAt: "2025-01-02T00:00:00.000Z" });
    expect(await backend.getSession("s2")).toEqual({ id: "s2", createdAt: "2025-01-02T00:00:00.000Z" });
  });

  it("getSession of an unknown id is undefined", async () => {
    expect(await backend.getSession("nobody")).toBeUndefined();
  });

  it("createSession refuses a taken id with SESSION_EXISTS and leaves the session as it was", async () => {
    await backend.createSession(record("s1", "first"), [event("s1", 1)]);
    await expectCode(backend.createSession(record("s1", "second"), [event("s1", 1), event("s1", 2)]), "SESSION_EXISTS");
    expect((await backend.getSession("s1"))?.title).toBe("first");
    expect(await readAll(backend, "s1")).toEqual([event("s1", 1)]);
  });

  it("createSession refuses an id that is not safe as a name with INVALID_SESSION_ID, creating nothing", async () => {
    for (const id of ["../escape", "a/b", "", ".hidden"]) {
      await expectCode(backend.createSession(record(id)), "INVALID_SESSION_ID");
    }
    expect(await backend.listSessionIds()).toEqual([]);
  });

  it("events given at creation are in the log, in order, and the lock starts after them", async () => {
    const events = [event("s1", 1), event("s1", 2), event("s1", 3)];
    await backend.createSession(record("s1"), events);
    expect(await readAll(backend, "s1")).toEqual(events);
    expect(await backend.lastEvent("s1")).toEqual(events[2]);
    const locked = await backend.lock("s1");
    expect(locked.lastSequence).toBe(3);
    await locked.append([event("s1", 4)], { sync: true });
    await locked.release();
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
  });

  it("a session created without events has an empty log", async () => {
    await backend.createSession(record("s1"));
    expect(await readAll(backend, "s1")).toEqual([]);
    expect(await backend.lastEvent("s1")).toBeUndefined();
    expect(await backend.listBlobs("s1")).toEqual([]);
    expect(await backend.listRecords("s1")).toEqual([]);
    const locked = await backend.lock("s1");
    expect(locked.lastSequence).toBe(0);
    await locked.release();
  });
}

/** An id that is not safe as a name, refused by every method that takes one (where it would become a place). */
function unsafeIdsRefused(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });
  it("every method that takes a session id refuses an unsafe one with INVALID_SESSION_ID", async () => {
    const drain = async (source: AsyncIterable<unknown>) => {
      for await (const _ of source);
    };
    await backend.createSession(record("s1"));
    const hash = blob("any").hash;
    for (const id of ["../escape", "a/b", "", ".hidden"]) {
      const calls: Record<string, () => Promise<unknown>> = {
        getSession: () => backend.getSession(id),
        deleteSession: () => backend.deleteSession(id),
        lastEvent: () => backend.lastEvent(id),
        readEvents: () => drain(backend.readEvents(id)),
        readBlob: () => backend.readBlob(id, hash),
        listBlobs: () => backend.listBlobs(id),
        readRecord: () => backend.readRecord(id, "intent"),
        listRecords: () => backend.listRecords(id),
        lock: () => backend.lock(id, { waitMs: 1000 }),
        blobsFrom: () => backend.createSession(record("s2"), [], { blobsFrom: { sessionId: id, hashes: new Set() } }),
        ...(backend.readEventBatches && { readEventBatches: () => drain(backend.readEventBatches!(id)) }),
        ...(backend.sizeOf && { sizeOf: () => backend.sizeOf!(id) }),
        ...(backend.usage && { usage: () => backend.usage!(id) }),
        ...(backend.digestBlob && { digestBlob: () => backend.digestBlob!(id, hash) }),
        ...(backend.storedBlobBytes && { storedBlobBytes: () => backend.storedBlobBytes!(id, hash) }),
        ...(backend.readArchivedLog && { readArchivedLog: () => drain(backend.readArchivedLog!(id, "archive")) }),
      };
      for (const [name, call] of Object.entries(calls))
        expect((await expectCode(call(), "INVALID_SESSION_ID")).message, `${name}(${JSON.stringify(id)})`).toBeTruthy();
    }
    expect(await backend.listSessionIds()).toEqual(["s1"]);
  });
}

/** Blobs copied for a fork; sessions listed and deleted. */
function sessionsForkedListedDeleted(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });
  it("createSession with blobsFrom copies the named blobs, and only those", async () => {
    const [a, b, c] = [blob("alpha"), blob("beta"), blob("gamma")];
    await backend.createSession(record("parent"));
    await withLock(backend, "parent", async (locked) => {
      for (const x of [a, b, c]) await locked.writeBlob(x.hash, x.bytes);
    });
    const neverWritten = blob("never written").hash;
    await backend.createSession(record("child"), [], {
      blobsFrom: { sessionId: "parent", hashes: new Set([a.hash, b.hash, neverWritten]) },
    });
    expect((await backend.listBlobs("child")).sort()).toEqual([a.hash, b.hash].sort());
    expect(await backend.readBlob("child", a.hash)).toEqual(Buffer.from(a.bytes));
    expect(await backend.readBlob("child", b.hash)).toEqual(Buffer.from(b.bytes));
    expect(await backend.readBlob("child", c.hash)).toBeUndefined();
    expect((await backend.listBlobs("parent")).sort()).toEqual([a.hash, b.hash, c.hash].sort());
  });

  it("a copied blob outlives its deletion from the session it came from", async () => {
    const a = blob("shared");
    await backend.createSession(record("parent"));
    await withLock(backend, "parent", (locked) => locked.writeBlob(a.hash, a.bytes));
    await backend.createSession(record("child"), [], { blobsFrom: { sessionId: "parent", hashes: [a.hash] } });
    await withLock(backend, "parent", (locked) => locked.deleteBlob(a.hash));
    expect(await backend.readBlob("parent", a.hash)).toBeUndefined();
    expect(await backend.readBlob("child", a.hash)).toEqual(Buffer.from(a.bytes));
  });

  it("listSessionIds lists every session and nothing else", async () => {
    expect(await backend.listSessionIds()).toEqual([]);
    for (const id of ["a", "b", "c"]) await backend.createSession(record(id));
    expect((await backend.listSessionIds()).sort()).toEqual(["a", "b", "c"]);
  });

  it("deleteSession removes the session, its log and its blobs, and says whether there was one", async () => {
    const a = blob("doomed");
    await backend.createSession(record("s1"), [event("s1", 1)]);
    await backend.createSession(record("s2"));
    await withLock(backend, "s1", async (locked) => {
      await locked.writeBlob(a.hash, a.bytes);
      await locked.writeRecord("note", { keep: false });
    });
    expect(await backend.deleteSession("s1")).toBe(true);
    expect(await backend.deleteSession("s1")).toBe(false);
    expect(await backend.getSession("s1")).toBeUndefined();
    expect(await backend.listSessionIds()).toEqual(["s2"]);
    await expectCode(readAll(backend, "s1"), "SESSION_NOT_FOUND");
    await expectCode(backend.lock("s1"), "SESSION_NOT_FOUND");
    expect(await backend.readBlob("s1", a.hash)).toBeUndefined();
  });
}

/** A deleted id used again. */
function sessionsMadeAgain(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });
  it("a deleted id can be used again and starts empty", async () => {
    const a = blob("old");
    await backend.createSession(record("s1", "old"), [event("s1", 1), event("s1", 2)]);
    await withLock(backend, "s1", async (locked) => {
      await locked.writeBlob(a.hash, a.bytes);
      await locked.writeRecord("note", 1);
    });
    await backend.deleteSession("s1");
    await backend.createSession(record("s1", "new"));
    expect((await backend.getSession("s1"))?.title).toBe("new");
    expect(await readAll(backend, "s1")).toEqual([]);
    expect(await backend.listBlobs("s1")).toEqual([]);
    expect(await backend.listRecords("s1")).toEqual([]);
    const locked = await backend.lock("s1");
    expect(locked.lastSequence).toBe(0);
    await locked.release();
  });
}

/** The optional methods a backend has, and what they do. */
function optionalMethods(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });
  it("the backend has every optional method it does not declare lacking, and none it does", async () => {
    const lacks = suite.options.lacks ?? {};
    const has = await optionalMethodsOf(backend, "s1");
    for (const [method, present] of Object.entries(has))
      expect(present, `${method}: declared ${method in lacks ? "lacking" : "present"}`).toBe(!(method in lacks));
  });

  suite.withOptional("sizeOf", "sizeOf grows as the log, blobs and records grow, by at least their bytes", async () => {
    await backend.createSession(record("s1"));
    const empty = await backend.sizeOf!("s1");
    expect(empty).toBeGreaterThanOrEqual(0);
    const events = range(1, 20).map((n) => event("s1", n));
    await withLock(backend, "s1", (locked) => locked.append(events, { sync: true }));
    const afterLog = await backend.sizeOf!("s1");
    const logBytes = events.reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e)), 0);
    expect(afterLog).toBeGreaterThanOrEqual(empty + logBytes);

    // Random, so a backend that compresses blobs still stores all 10 000 bytes.
    const big = { hash: "", bytes: randomBytes(10_000) };
    big.hash = sha256(big.bytes);
    await withLock(backend, "s1", (locked) => locked.writeBlob(big.hash, big.bytes));
    const afterBlob = await backend.sizeOf!("s1");
    expect(afterBlob).toBeGreaterThanOrEqual(afterLog + 10_000);

    const value = { note: "y".repeat(2000) };
    await withLock(backend, "s1", (locked) => locked.writeRecord("note", value));
    expect(await backend.sizeOf!("s1")).toBeGreaterThanOrEqual(afterBlob + JSON.stringify(value).length);
  });

  suite.withOptional(
    "sizeOf",
    "sizeOf counts at least every byte the session holds, whatever was written at creation, and one session only",
    async () => {
      const events = range(1, 10).map((n) => event("s1", n));
      await backend.createSession(record("s1"), events);
      await backend.createSession(record("s2"));
      const a = blob("a blob of s1");
      await withLock(backend, "s1", async (locked) => {
        await locked.writeBlob(a.hash, a.bytes);
        await locked.writeRecord("r", [1, 2, 3]);
      });
      let held = a.bytes.length + JSON.stringify([1, 2, 3]).length;
      for (const e of await readAll(backend, "s1")) held += Buffer.byteLength(JSON.stringify(e));
      expect(await backend.sizeOf!("s1")).toBeGreaterThanOrEqual(held);
      expect(await backend.sizeOf!("s2")).toBeLessThan(held);
    },
  );
}
