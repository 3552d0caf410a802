import { describe, expect, it } from "vitest";
import type { SessionStore } from "../../src/index.js";
import { fsBackend, type StorageBackend } from "../../src/backend/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

/** The fs backend, counting how often the lock is taken: each take after the first is a hand-over. */
function countingLocks(root: string): { backend: StorageBackend; takes: () => number } {
  const inner = fsBackend({ root });
  let takes = 0;
  const backend = Object.create(inner) as StorageBackend;
  backend.lock = (id, options) => {
    takes++;
    return inner.lock(id, options);
  };
  return { backend, takes: () => takes };
}

/** Appends nonstop for `ms`, or until `enough` says so. */
async function appendFor(store: SessionStore, id: string, ms: number, enough = () => false): Promise<number> {
  const until = Date.now() + ms;
  let appended = 0;
  while (Date.now() < until && !enough()) {
    await store.append(id, { type: "message", payload: { role: "assistant", content: `step ${appended}` } });
    appended++;
  }
  return appended;
}

describe("the lease hands the lock over only when someone waits", () => {
  it("a lone writer appending for 1.5 s with lockMaxHoldMs 200 takes the lock once", async () => {
    const root = await tempDir();
    const { backend, takes } = countingLocks(root);
    const store = openStore({ backend, lockMaxHoldMs: 200 });
    try {
      const { id } = await store.create();
      const appended = await appendFor(store, id, 1500);
      expect(appended).toBeGreaterThan(10);
      // Before: released and re-taken (with a 25 ms pause) every 200 ms, 7 or 8 times here.
      expect(takes()).toBe(1);
    } finally {
      await store.close();
      await backend.close();
    }
  });

  it("a writer in another process waiting for the lock gets it while this one appends nonstop (3 rounds)", async () => {
    const root = await tempDir();
    const { backend, takes } = countingLocks(root);
    const store = openStore({ backend, lockMaxHoldMs: 200 });
    try {
      const { id } = await store.create();
      for (let round = 0; round < 3; round++) {
        const before = takes();
        // Nonstop from before the child starts until it has ended (3 s at most: past its own 2.5 s wait).
        let childEnded = false;
        const busy = appendFor(store, id, 3000, () => childEnded);
        // The child waits up to 2.5 s: it gets the lock at the next hand-over, within about 200 ms.
        const child = new Child("append-once.ts", [root, id, "2500", `from the child, round ${round}`]);
        children.push(child);
        const run = await child.done();
        childEnded = true;
        const result = JSON.parse(run.stdout) as { ok: boolean; code?: string };
        await busy;
        expect(result).toEqual(expect.objectContaining({ ok: true }));
        expect(takes()).toBeGreaterThan(before);
      }
    } finally {
      await store.close();
      await backend.close();
    }
  }, 60_000);
});
