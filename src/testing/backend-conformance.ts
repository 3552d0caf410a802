import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { LockedSession, SessionRecord, StorageBackend } from "../backend/types.js";
import { isAgentTapeError, type AgentTapeErrorCode } from "../core/errors.js";
import type { CheckpointPayload, StoredEvent } from "../core/events.js";
import { SessionStore, withLockedSession } from "../session/session-store.js";

export interface BackendConformanceOptions {
  /** Shown in the test names, e.g. "fs". */
  name: string;
  /** Makes a fresh, empty backend. Called before every test. */
  create: () => StorageBackend | Promise<StorageBackend>;
  /** Removes what `create` made (temp folders, tables). Called after every test, after `backend.close()`. */
  destroy?: (backend: StorageBackend) => void | Promise<void>;
}

/**
 * Registers (with vitest's `describe` / `it`) every check a {@link StorageBackend} must pass, and
 * runs a {@link SessionStore} on top of it. Call it from one of your test files:
 *
 * ```ts
 * import { runBackendConformance } from "agent-tape/testing";
 * runBackendConformance({ name: "postgres", create: () => postgresBackend({ pool }), destroy: dropTables });
 * ```
 *
 * Beyond what `StorageBackend`'s JSDoc states, the suite fixes the error codes callers rely on:
 * a rejected append (a sequence not above the one before) and a write through a released lock are
 * INVALID_ARGUMENT, as is a blob name that is not a lowercase hex sha256 or a record name with
 * a path separator. It needs nothing from the backend it cannot reach through the interface, so
 * it cannot check what a crash leaves behind: test that per backend.
 */
export function runBackendConformance(options: BackendConformanceOptions): void {
  describe(`storage backend conformance: ${options.name}`, () => {
    let backend: StorageBackend;

    beforeEach(async () => {
      backend = await options.create();
    });

    afterEach(async () => {
      await backend.close();
      await options.destroy?.(backend);
    });

    describe("sessions", () => {
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
        await expectCode(
          backend.createSession(record("s1", "second"), [event("s1", 1), event("s1", 2)]),
          "SESSION_EXISTS",
        );
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
    });

    describe("reading the log", () => {
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
    });

    describe("blobs", () => {
      it("writeBlob stores bytes under their hash: readBlob, hasBlob and listBlobs see them", async () => {
        const a = blob("file contents\n");
        const empty = blob("");
        const binary = { hash: sha256(Buffer.from([0, 255, 10, 13, 0])), bytes: Uint8Array.from([0, 255, 10, 13, 0]) };
        await backend.createSession(record("s1"));
        await withLock(backend, "s1", async (locked) => {
          expect(await locked.hasBlob(a.hash)).toBe(false);
          for (const x of [a, empty, binary]) expect(await locked.writeBlob(x.hash, x.bytes)).toBe(true);
          expect(await locked.hasBlob(a.hash)).toBe(true);
          expect(await locked.hasBlob(empty.hash)).toBe(true);
        });
        expect(await backend.readBlob("s1", a.hash)).toEqual(Buffer.from(a.bytes));
        expect(await backend.readBlob("s1", empty.hash)).toEqual(Buffer.alloc(0));
        expect(await backend.readBlob("s1", binary.hash)).toEqual(Buffer.from(binary.bytes));
        expect((await backend.listBlobs("s1")).sort()).toEqual([a.hash, empty.hash, binary.hash].sort());
      });

      it("writeBlob of a hash already stored writes nothing and returns false", async () => {
        const a = blob("first bytes");
        await backend.createSession(record("s1"));
        await withLock(backend, "s1", async (locked) => {
          expect(await locked.writeBlob(a.hash, a.bytes)).toBe(true);
          expect(await locked.writeBlob(a.hash, a.bytes)).toBe(false);
          // Content addressing: the name promises the bytes, so the stored ones are kept.
          expect(await locked.writeBlob(a.hash, Buffer.from("other bytes"))).toBe(false);
        });
        expect(await backend.readBlob("s1", a.hash)).toEqual(Buffer.from(a.bytes));
        expect(await backend.listBlobs("s1")).toEqual([a.hash]);
      });

      it("readBlob of an absent blob, or of a name that is no hash, is undefined", async () => {
        await backend.createSession(record("s1"));
        expect(await backend.readBlob("s1", blob("absent").hash)).toBeUndefined();
        expect(await backend.readBlob("s1", "not-a-hash")).toBeUndefined();
        expect(await backend.readBlob("s1", "../session.json")).toBeUndefined();
      });

      it("writeBlob refuses a name that is not a lowercase hex sha256 with INVALID_ARGUMENT", async () => {
        await backend.createSession(record("s1"));
        const upper = blob("x").hash.toUpperCase();
        await withLock(backend, "s1", async (locked) => {
          for (const name of ["../../../escape", "abc", upper, `${blob("x").hash}0`]) {
            await expectCode(locked.writeBlob(name, Buffer.from("x")), "INVALID_ARGUMENT");
          }
          expect(await locked.hasBlob("../../../escape")).toBe(false);
        });
        expect(await backend.listBlobs("s1")).toEqual([]);
      });

      it("deleteBlob of a name that is not a hash deletes nothing, not even another session's files", async () => {
        await backend.createSession(record("s1"));
        await backend.createSession(record("s2", "victim"), [event("s2", 1)]);
        await withLock(backend, "s1", async (locked) => {
          for (const name of ["../s2/events.jsonl", "../s2/session.json", "../../s2/events.jsonl", "..", "../s2"]) {
            // Refusing the name and ignoring it are both fine; following it is not.
            await locked
              .deleteBlob(name)
              .catch((error: unknown) => expect(isAgentTapeError(error, "INVALID_ARGUMENT")).toBe(true));
          }
        });
        expect(await backend.getSession("s2")).toEqual(record("s2", "victim"));
        expect(await readAll(backend, "s2")).toEqual([event("s2", 1)]);
      });

      it("deleteBlob removes a blob, and deleting an absent one is not an error", async () => {
        const [a, b] = [blob("keep"), blob("drop")];
        await backend.createSession(record("s1"));
        await withLock(backend, "s1", async (locked) => {
          await locked.writeBlob(a.hash, a.bytes);
          await locked.writeBlob(b.hash, b.bytes);
          await locked.deleteBlob(b.hash);
          await locked.deleteBlob(b.hash);
          await locked.deleteBlob(blob("never").hash);
          expect(await locked.hasBlob(b.hash)).toBe(false);
          expect(await locked.hasBlob(a.hash)).toBe(true);
          // Deleted means writable again.
          expect(await locked.writeBlob(b.hash, b.bytes)).toBe(true);
          await locked.deleteBlob(b.hash);
        });
        expect(await backend.readBlob("s1", b.hash)).toBeUndefined();
        expect(await backend.listBlobs("s1")).toEqual([a.hash]);
      });

      it("stored blob bytes do not change when the caller reuses its buffers", async () => {
        const bytes = Buffer.from("snapshot");
        const hash = sha256(bytes);
        await backend.createSession(record("s1"));
        await withLock(backend, "s1", (locked) => locked.writeBlob(hash, bytes));
        bytes.fill(0);
        const read = await backend.readBlob("s1", hash);
        read?.fill(1);
        expect(await backend.readBlob("s1", hash)).toEqual(Buffer.from("snapshot"));
      });

      it("blobs belong to one session", async () => {
        const a = blob("mine");
        await backend.createSession(record("s1"));
        await backend.createSession(record("s2"));
        await withLock(backend, "s1", (locked) => locked.writeBlob(a.hash, a.bytes));
        expect(await backend.readBlob("s2", a.hash)).toBeUndefined();
        expect(await backend.listBlobs("s2")).toEqual([]);
        await withLock(backend, "s2", async (locked) => expect(await locked.hasBlob(a.hash)).toBe(false));
      });
    });

    describe("side records", () => {
      it("writeRecord stores a value that readRecord returns and listRecords names", async () => {
        const value = { kind: "rewind-intent", targets: [1, 2, 3], nested: { ok: true, none: null }, text: "é\n" };
        await backend.createSession(record("s1"));
        await withLock(backend, "s1", async (locked) => {
          await locked.writeRecord("rewind-intent", value);
          await locked.writeRecord("archive.7", [1, "two"], { durable: false });
        });
        expect(await backend.readRecord("s1", "rewind-intent")).toEqual(value);
        expect(await backend.readRecord("s1", "archive.7")).toEqual([1, "two"]);
        expect((await backend.listRecords("s1")).sort()).toEqual(["archive.7", "rewind-intent"]);
      });

      it("writeRecord replaces a record of the same name", async () => {
        await backend.createSession(record("s1"));
        await withLock(backend, "s1", async (locked) => {
          await locked.writeRecord("state", { step: 1 });
          await locked.writeRecord("state", { step: 2 });
        });
        expect(await backend.readRecord("s1", "state")).toEqual({ step: 2 });
        expect(await backend.listRecords("s1")).toEqual(["state"]);
      });

      it("deleteRecord removes a record, and deleting an absent one is not an error", async () => {
        await backend.createSession(record("s1"));
        await withLock(backend, "s1", async (locked) => {
          await locked.writeRecord("a", 1);
          await locked.writeRecord("b", 2);
          await locked.deleteRecord("a");
          await locked.deleteRecord("a");
          await locked.deleteRecord("never-written");
        });
        expect(await backend.readRecord("s1", "a")).toBeUndefined();
        expect(await backend.readRecord("s1", "b")).toBe(2);
        expect(await backend.listRecords("s1")).toEqual(["b"]);
      });

      it("readRecord of an absent record is undefined", async () => {
        await backend.createSession(record("s1"));
        expect(await backend.readRecord("s1", "absent")).toBeUndefined();
      });

      it("a record name with a path separator is refused with INVALID_ARGUMENT", async () => {
        await backend.createSession(record("s1"));
        await withLock(backend, "s1", async (locked) => {
          for (const name of ["../escape", "a/b", "a\\b"])
            await expectCode(locked.writeRecord(name, 1), "INVALID_ARGUMENT");
        });
        expect(await backend.listRecords("s1")).toEqual([]);
      });
    });

    describe("the session lock", () => {
      it("lock of an unknown session throws SESSION_NOT_FOUND", async () => {
        await expectCode(backend.lock("nobody", { waitMs: 1000 }), "SESSION_NOT_FOUND");
      });

      it("a second lock waits until the first is released, then sees what the first wrote", async () => {
        await backend.createSession(record("s1"));
        const first = await backend.lock("s1");
        let second: LockedSession | undefined;
        const waiting = backend.lock("s1", { waitMs: 30_000 }).then((locked) => (second = locked));
        await pause(200); // long enough for a polling lock to have retried many times
        expect(second).toBeUndefined();
        await first.append([event("s1", 1)], { sync: true });
        await first.release();
        await waiting;
        expect(second?.held).toBe(true);
        expect(second?.lastSequence).toBe(1);
        await second?.release();
      });

      it("lock gives up with LOCKED after waitMs while another holder keeps it", async () => {
        await backend.createSession(record("s1"));
        const first = await backend.lock("s1");
        const error = await expectCode(backend.lock("s1", { waitMs: 100 }), "LOCKED");
        expect(error.message).toContain("s1");
        expect(first.held).toBe(true);
        await first.append([event("s1", 1)], { sync: true });
        await first.release();
        await withLock(backend, "s1", async (locked) => expect(locked.lastSequence).toBe(1));
      });

      it("a wait for the lock of a session deleted meanwhile ends in SESSION_NOT_FOUND", async () => {
        await backend.createSession(record("s1"), [event("s1", 1)]);
        const first = await backend.lock("s1");
        const waiting = backend.lock("s1", { waitMs: 30_000 }).then(
          async (locked) => {
            await locked.release();
            return undefined;
          },
          (error: unknown) => error,
        );
        await pause(50);
        expect(await backend.deleteSession("s1")).toBe(true);
        await first.release();
        expect(isAgentTapeError(await waiting, "SESSION_NOT_FOUND")).toBe(true);
      });

      it("an aborted wait for the lock rejects with the signal's reason and takes nothing", async () => {
        await backend.createSession(record("s1"));
        const first = await backend.lock("s1");
        const controller = new AbortController();
        const reason = new Error("user gave up");
        const waiting = backend.lock("s1", { waitMs: 30_000, signal: controller.signal });
        await pause(50);
        controller.abort(reason);
        await expect(waiting).rejects.toBe(reason);
        await first.release();
        const next = await backend.lock("s1", { waitMs: 5000 });
        expect(next.held).toBe(true);
        await next.release();

        const already = new AbortController();
        already.abort(reason);
        await expect(backend.lock("s1", { signal: already.signal })).rejects.toBe(reason);
        await withLock(backend, "s1", async (locked) => expect(locked.held).toBe(true));
      });

      it("concurrent lockers take turns: each one sees every earlier holder's appends", async () => {
        await backend.createSession(record("s1"));
        const rounds = 5;
        const workers = 6;
        await Promise.all(
          Array.from({ length: workers }, async () => {
            for (let i = 0; i < rounds; i++) {
              const locked = await backend.lock("s1", { waitMs: 30_000 });
              try {
                const next = locked.lastSequence + 1;
                await pause(1); // widen the window a missing lock would let another writer into
                await locked.append([event("s1", next)], { sync: true });
              } finally {
                await locked.release();
              }
            }
          }),
        );
        expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual(range(1, rounds * workers));
      });

      it("locks on different sessions do not wait for each other", async () => {
        await backend.createSession(record("s1"));
        await backend.createSession(record("s2"));
        const one = await backend.lock("s1");
        const two = await backend.lock("s2", { waitMs: 0 });
        expect([one.held, two.held]).toEqual([true, true]);
        await one.release();
        await two.release();
      });

      it("held is true until release; release is idempotent and frees the lock", async () => {
        await backend.createSession(record("s1"));
        const locked = await backend.lock("s1");
        expect(locked.held).toBe(true);
        expect(locked.sessionId).toBe("s1");
        expect(() => locked.assertHeld()).not.toThrow();
        await locked.release();
        expect(locked.held).toBe(false);
        await locked.release();
        expect(locked.held).toBe(false);
        const again = await backend.lock("s1", { waitMs: 1000 });
        expect(again.held).toBe(true);
        await again.release();
      });

      it("a released lock writes nothing more: every write is refused with INVALID_ARGUMENT", async () => {
        const a = blob("late");
        await backend.createSession(record("s1"), [event("s1", 1), event("s1", 2)]);
        const locked = await backend.lock("s1");
        await locked.release();
        expect(() => locked.assertHeld()).toThrow();
        await expectCode(locked.append([event("s1", 3)], { sync: true }), "INVALID_ARGUMENT");
        await expectCode(locked.truncateAfter(0), "INVALID_ARGUMENT");
        await expectCode(locked.writeBlob(a.hash, a.bytes), "INVALID_ARGUMENT");
        await expectCode(locked.writeRecord("late", 1), "INVALID_ARGUMENT");
        expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2]);
        expect(await backend.listBlobs("s1")).toEqual([]);
        expect(await backend.listRecords("s1")).toEqual([]);
      });

      it("close releases every lock the backend holds", async () => {
        await backend.createSession(record("s1"));
        await backend.createSession(record("s2"));
        const held = [await backend.lock("s1"), await backend.lock("s2")];
        await backend.close();
        expect(held.map((l) => l.held)).toEqual([false, false]);
        await backend.close();
        await withLock(backend, "s1", async (locked) => expect(locked.held).toBe(true));
      });
    });

    describe("writing under the lock", () => {
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
    });

    describe("a SessionStore on this backend", () => {
      it("creates, appends, reads and lists sessions", async () => {
        const store = new SessionStore({ backend });
        const first = await store.create({ id: "first", title: "first session" });
        const second = await store.create({ id: "second" });
        expect(first).toMatchObject({ id: "first", title: "first session", lastSequence: 0 });

        const appended = await store.append(first.id, { type: "message", payload: { role: "user", content: "hi" } });
        expect(appended).toMatchObject({ sessionId: "first", sequence: 1, type: "message" });
        const many = await store.appendMany(first.id, [
          { type: "tool_call", payload: { callId: "c1", name: "read_file", input: { path: "a.ts" } } },
          { type: "tool_result", payload: { callId: "c1", output: "contents" } },
        ]);
        expect(many.map((e) => e.sequence)).toEqual([2, 3]);
        await expectCode(
          store.append(first.id, { type: "message", payload: { role: "nobody", content: 1 } } as never),
          "INVALID_EVENT",
        );

        const all = await store.readAll(first.id);
        expect(all.map((e) => [e.sequence, e.type])).toEqual([
          [1, "message"],
          [2, "tool_call"],
          [3, "tool_result"],
        ]);
        expect(all[0]).toEqual(appended);
        expect(
          (await store.readAll(first.id, { fromSequence: 2, types: ["tool_result"] })).map((e) => e.sequence),
        ).toEqual([3]);
        expect(await store.get(first.id)).toMatchObject({
          lastSequence: 3,
          title: "first session",
          updatedAt: all[2]!.createdAt,
        });
        expect(await store.get("missing")).toBeUndefined();
        expect((await store.list()).map((s) => s.id).sort()).toEqual([first.id, second.id].sort());
        await store.close();
      });

      it("forks the log prefix with a session_fork event and the blobs its checkpoints need", async () => {
        const store = new SessionStore({ backend });
        const parent = await store.create({ id: "parent", title: "parent", workspace: "/ws" });
        const before = blob("export const a = 1;\n");
        const later = blob("export const a = 2;\n");
        await store.append(parent.id, { type: "message", payload: { role: "user", content: "edit a.ts" } });
        await withLockedSession(store, parent.id, async (locked) => {
          await locked.writeBlob(before.hash, before.bytes);
          await locked.writeBlob(later.hash, later.bytes);
        });
        await store.append(parent.id, { type: "session_checkpoint", payload: checkpoint(before.hash) });
        await store.append(parent.id, { type: "message", payload: { role: "assistant", content: "done" } });
        await store.append(parent.id, { type: "session_checkpoint", payload: checkpoint(later.hash) });

        const child = await store.fork(parent.id, { id: "child", atSequence: 2 });
        expect(child).toMatchObject({
          id: "child",
          title: "parent",
          workspace: "/ws",
          parent: { id: "parent", atSequence: 2 },
          lastSequence: 3,
        });
        const events = await store.readAll(child.id);
        expect(events.map((e) => [e.sequence, e.type, e.sessionId])).toEqual([
          [1, "message", "child"],
          [2, "session_checkpoint", "child"],
          [3, "session_fork", "child"],
        ]);
        expect(events[2]?.payload).toEqual({ parentId: "parent", atSequence: 2 });
        expect(await backend.listBlobs(child.id)).toEqual([before.hash]);
        expect(await backend.readBlob(child.id, before.hash)).toEqual(Buffer.from(before.bytes));
        expect((await store.readAll(parent.id)).map((e) => e.sequence)).toEqual([1, 2, 3, 4]);

        await store.append(child.id, { type: "message", payload: { role: "user", content: "on the fork" } });
        expect((await store.get(child.id))?.lastSequence).toBe(4);
        expect((await store.get(parent.id))?.lastSequence).toBe(4);
        await store.close();
      });

      it("two stores sharing the backend append to one session without losing or interleaving events", async () => {
        const a = new SessionStore({ backend });
        const b = new SessionStore({ backend });
        const { id } = await a.create({ id: "shared" });
        const perStore = 15;
        const write = (store: SessionStore, name: string) =>
          Promise.all(
            range(1, perStore).map((i) =>
              store.append(id, { type: "message", payload: { role: "user", content: `${name}-${i}` } }),
            ),
          );
        await Promise.all([write(a, "a"), write(b, "b")]);
        const events = await a.readAll(id);
        expect(events.map((e) => e.sequence)).toEqual(range(1, perStore * 2));
        const contents = events.map((e) => (e.payload as { content: string }).content);
        for (const name of ["a", "b"]) {
          expect(contents.filter((c) => c.startsWith(`${name}-`))).toEqual(
            range(1, perStore).map((i) => `${name}-${i}`),
          );
        }
        await a.close();
        await b.close();
      });

      it("deletes a session", async () => {
        const store = new SessionStore({ backend });
        const { id } = await store.create({ id: "gone" });
        await store.append(id, { type: "message", payload: { role: "user", content: "bye" } });
        expect(await store.delete(id)).toBe(true);
        expect(await store.get(id)).toBeUndefined();
        expect(await store.delete(id)).toBe(false);
        expect(await backend.listSessionIds()).toEqual([]);
        await store.close();
      });
    });
  });
}

// ---- helpers -----------------------------------------------------------------------------

function record(id: string, title?: string): SessionRecord {
  const r: SessionRecord = { id, createdAt: "2025-01-01T00:00:00.000Z" };
  if (title !== undefined) r.title = title;
  return r;
}

function event(
  sessionId: string,
  sequence: number,
  payload: unknown = { role: "user", content: `event ${sequence}` },
): StoredEvent {
  return {
    v: 1,
    id: `${sessionId}-event-${sequence}`,
    sessionId,
    sequence,
    type: "message",
    createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, sequence)).toISOString(),
    payload,
  };
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function blob(text: string): { hash: string; bytes: Uint8Array } {
  const bytes = Buffer.from(text, "utf8");
  return { hash: sha256(bytes), bytes };
}

function checkpoint(hash: string): CheckpointPayload {
  return {
    tool: "edit_file",
    workspace: "/ws",
    files: [{ path: "a.ts", kind: "blob", blob: hash, bytes: 20, mode: 0o644 }],
  };
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function readAll(
  backend: StorageBackend,
  id: string,
  options: Parameters<StorageBackend["readEvents"]>[1] = {},
): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  for await (const e of backend.readEvents(id, options)) events.push(e);
  return events;
}

async function withLock<T>(backend: StorageBackend, id: string, fn: (locked: LockedSession) => Promise<T>): Promise<T> {
  const locked = await backend.lock(id, { waitMs: 10_000 });
  try {
    return await fn(locked);
  } finally {
    await locked.release();
  }
}

/** Awaits `promise`, asserts it rejected with an agent-tape error of `code`, and returns that error. */
async function expectCode(promise: Promise<unknown>, code: AgentTapeErrorCode): Promise<Error> {
  let outcome: { error: unknown } | undefined;
  try {
    await promise;
  } catch (error) {
    outcome = { error };
  }
  expect(outcome, `expected a ${code} error, but the call succeeded`).toBeDefined();
  const { error } = outcome!;
  expect(isAgentTapeError(error, code), `expected a ${code} error, got ${String(error)}`).toBe(true);
  return error as Error;
}
