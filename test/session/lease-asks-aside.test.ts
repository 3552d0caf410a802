import { describe, expect, it } from "vitest";
import { memoryBackend, type StorageBackend } from "../../src/backend/index.js";
import { openStore } from "../helpers/fixture.js";

// Past lockMaxHoldMs the lease asks whether anyone waits for the lock; no operation waits for the answer, which
// on PostgreSQL is a round trip of its own (docs/postgres.md, "Benchmark"). A yes hands over at a later operation.

/** The memory backend with `othersWaiting` answered by `answer`, the locks it takes and the questions counted. */
function askedBackend(answer: () => Promise<boolean>): {
  backend: StorageBackend;
  takes: () => number;
  asked: () => number;
} {
  const inner = memoryBackend();
  let takes = 0;
  let asked = 0;
  const backend = Object.create(inner) as StorageBackend;
  backend.lock = async (id, options) => {
    takes++;
    const locked = await inner.lock(id, options);
    locked.othersWaiting = () => {
      asked++;
      return answer();
    };
    return locked;
  };
  return { backend, takes: () => takes, asked: () => asked };
}

const message = { type: "message", payload: { role: "user", content: "x" } } as const;

describe("the lease asks whether anyone waits beside the operation, not before it", () => {
  it("appends go on while the question has no answer, and it is asked once at a time", async () => {
    let answer!: (waits: boolean) => void;
    const { backend, takes, asked } = askedBackend(() => new Promise((resolve) => (answer = resolve)));
    const store = openStore({ backend, durability: "fsync", lockIdleMs: 60_000, lockMaxHoldMs: 20 });
    try {
      const { id } = await store.create();
      await store.append(id, message);
      await new Promise((resolve) => setTimeout(resolve, 40));
      for (let i = 0; i < 20; i++) await store.append(id, message); // would hang here if an append waited
      expect(asked()).toBe(1);
      answer(true);
      await new Promise((resolve) => setTimeout(resolve, 0));
      const before = takes();
      await store.append(id, message); // the yes: this one hands the lock over and takes it again
      expect(takes()).toBe(before + 1);
      expect((await store.readAll(id)).length).toBe(22);
    } finally {
      await store.close();
    }
  });

  it("a backend that fails to answer counts as a waiter, and nothing is left unhandled", async () => {
    const { backend, takes } = askedBackend(() => Promise.reject(new Error("no answer")));
    const store = openStore({ backend, durability: "fsync", lockIdleMs: 60_000, lockMaxHoldMs: 20 });
    try {
      const { id } = await store.create();
      await store.append(id, message);
      await new Promise((resolve) => setTimeout(resolve, 40));
      await store.append(id, message); // asks
      await new Promise((resolve) => setTimeout(resolve, 0));
      await store.append(id, message); // hands over
      expect(takes()).toBe(2);
    } finally {
      await store.close();
    }
  });
});
