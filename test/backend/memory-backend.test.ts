import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { memoryBackend } from "../../src/backend/memory/memory-backend.js";
import { isAgentTapeError } from "../../src/core/errors.js";
import { event, readAll } from "../helpers/stored-events.js";

const created = "2025-01-01T00:00:00.000Z";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("memory backend: what sets it apart", () => {
  it("each instance has its own sessions: nothing is shared between them", async () => {
    const one = memoryBackend();
    const two = memoryBackend();
    await one.createSession({ id: "s1", createdAt: created }, [event("s1", 1)]);
    expect(await two.listSessionIds()).toEqual([]);
    expect(await two.getSession("s1")).toBeUndefined();
    await two.createSession({ id: "s1", createdAt: created });
    expect(await readAll(one, "s1")).toEqual([event("s1", 1)]);
    expect(await readAll(two, "s1")).toEqual([]);
  });

  it("lockWaitMs is how long lock waits when the caller gives no waitMs", async () => {
    const backend = memoryBackend({ lockWaitMs: 50 });
    await backend.createSession({ id: "s1", createdAt: created });
    const held = await backend.lock("s1");
    expect(isAgentTapeError(await rejection(backend.lock("s1")), "LOCKED")).toBe(true);
    await held.release();
  });

  it("waiters get the lock in the order they asked for it", async () => {
    const backend = memoryBackend();
    await backend.createSession({ id: "s1", createdAt: created });
    const first = await backend.lock("s1");
    const order: number[] = [];
    const waiters = [1, 2, 3].map((n) =>
      backend.lock("s1").then(async (locked) => {
        order.push(n);
        await locked.append([event("s1", locked.lastSequence + 1)], { sync: true });
        await locked.release();
      }),
    );
    await first.release();
    await Promise.all(waiters);
    expect(order).toEqual([1, 2, 3]);
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2, 3]);
  });

  it("createSession refuses events whose sequences do not increase, creating nothing", async () => {
    const backend = memoryBackend();
    const error = await rejection(
      backend.createSession({ id: "s1", createdAt: created }, [event("s1", 2), event("s1", 1)]),
    );
    expect(isAgentTapeError(error, "INVALID_ARGUMENT")).toBe(true);
    expect(await backend.getSession("s1")).toBeUndefined();
  });

  it("sizeOf counts the log lines, blobs and records as the files would hold them", async () => {
    const backend = memoryBackend();
    await backend.createSession({ id: "s1", createdAt: created });
    const empty = await backend.sizeOf!("s1");
    const bytes = Buffer.alloc(4096, 7);
    const locked = await backend.lock("s1");
    await locked.writeBlob(createHash("sha256").update(bytes).digest("hex"), bytes);
    const afterBlob = await backend.sizeOf!("s1");
    await locked.append([event("s1", 1)], { sync: true });
    await locked.writeRecord("note", { a: 1 });
    await locked.release();
    expect(afterBlob - empty).toBe(4096);
    expect(await backend.sizeOf!("s1")).toBeGreaterThan(afterBlob + JSON.stringify(event("s1", 1)).length);
    expect(await backend.sizeOf!("nobody")).toBe(0);
  });
});
