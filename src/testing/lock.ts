import { beforeEach, describe, expect, it } from "vitest";
import type { LockedSession, StorageBackend } from "../backend/types.js";
import { isAgentTapeError } from "../index.js";
import { blob, event, expectCode, pause, range, readAll, record, withLock } from "./fixtures.js";
import { runAreas, type BackendConformanceOptions, type ConformanceArea, type ConformanceSuite } from "./suite.js";

/** The session lock: exclusive, waits and gives up as told, released writes refused, stale locks taken over. */
export const lockArea: ConformanceArea = (suite) => {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  describe("the session lock", () => {
    takingTheLock(suite);
    givingUp(suite);
    holdingAndReleasing(suite);
  });

  suite.describeNeeding(["crashedHolder"], "a holder that died", () => {
    suite.withCrashedHolder(
      "a lock left by a holder that died is taken over, with the log as the holder left it",
      async (leaveCrashedHolder) => {
        await backend.createSession(record("s1"), [event("s1", 1)]);
        await leaveCrashedHolder("s1");
        const locked = await backend.lock("s1", { waitMs: 30_000 });
        try {
          expect(locked.held).toBe(true);
          expect(locked.lastSequence).toBe(1);
          await locked.append([event("s1", 2)], { sync: true });
        } finally {
          await locked.release();
        }
        expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2]);
      },
    );
  });
};

/** Registers (with vitest) the lock area of the conformance suite alone; `runBackendConformance` runs every area. */
export function runLockConformance(options: BackendConformanceOptions): void {
  runAreas(options, [lockArea]);
}

/** Taking the lock: unknown sessions, a second locker waiting its turn, the optional othersWaiting. */
function takingTheLock(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

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

  suite.withOptional(
    "othersWaiting",
    "othersWaiting is false with nobody waiting, true while a lock() waits",
    async () => {
      await backend.createSession(record("s1"));
      const first = await backend.lock("s1");
      expect(await first.othersWaiting!()).toBe(false);
      const waiting = backend.lock("s1", { waitMs: 30_000 });
      let seen = false;
      for (let i = 0; i < 100 && !seen; i++) {
        await pause(20);
        seen = await first.othersWaiting!();
      }
      expect(seen).toBe(true);
      await first.release();
      const second = await waiting;
      // The waiter got the lock: it no longer counts as waiting.
      expect(await second.othersWaiting!()).toBe(false);
      await second.release();
    },
  );
}

/** Waits that end without the lock: LOCKED after waitMs, the session deleted meanwhile, an aborted signal. */
function givingUp(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
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
}

/** Holders in turn, on different sessions, and what held, release and close mean. */
function holdingAndReleasing(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
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
}
