// The lock errors that need a second process: one holding the lock, one taking it over, one losing it.
import { access, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expectRejection } from "../helpers/expect-rejection.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { openStore, tempStore } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

describe("LOCKED", () => {
  it("is what a writer gets when another process holds the lock past lockWaitMs; nothing is written", async () => {
    const { store, root } = await tempStore({ lockWaitMs: 400 });
    const { id } = await store.create();
    await store.append(id, say("before"));
    await store.close();
    const holder = new Child("hold-lock.ts", [root, id]);
    children.push(holder);
    expect(await holder.waitForLine((l) => l.startsWith("held"))).toBe("held 1");

    const { store: writer } = await tempStore({ root, lockWaitMs: 400 });
    const before = await readFile(join(root, id, "events.jsonl"));
    const error = await expectRejection(() => writer.append(id, say("blocked")), "LOCKED");
    expect(error.sessionId).toBe(id);
    expect(error.waitedMs).toBeGreaterThanOrEqual(400);
    await expectRejection(() => writer.fork(id), "LOCKED");
    await expectRejection(() => writer.delete(id), "LOCKED");
    expect(await readFile(join(root, id, "events.jsonl"))).toEqual(before);
    expect(await writer.list()).toHaveLength(1);

    // Once the other process lets go, the same store writes.
    holder.endInput();
    expect((await holder.done()).code).toBe(0);
    expect((await writer.append(id, say("now"))).sequence).toBe(2);
  });
});

describe("LOCK_COMPROMISED", () => {
  // proper-lockfile checks its lock every max(1000, lockStaleMs / 4) ms; wait out several checks (a loaded
  // machine delays its timer: 2.5 s was once not enough in CI).
  const detection = 5_000;

  it("does not free the lock of the process that took it over", async () => {
    const { store, root } = await tempStore({ lockStaleMs: 2000, lockIdleMs: 60_000, lockWaitMs: 10_000 });
    const { id } = await store.create();
    await store.append(id, say("1"));
    const lockDir = join(root, id, "events.jsonl.lock");
    // Our lock vanishes and another process takes the session.
    await rm(lockDir, { recursive: true });
    const taker = new Child("hold-lock.ts", [root, id]);
    children.push(taker);
    await taker.waitForLine((l) => l.startsWith("held"));
    await pause(detection);

    // The taker's folder may carry the very mtime ours had (proper-lockfile stamps a new lock with the next
    // whole second + 5 ms): the loss is still seen, since ownership is the folder's inode.
    await expectRejection(() => store.withLock(id, async () => "ran"), "LOCK_COMPROMISED");
    await store.close();
    expect(await exists(lockDir)).toBe(true);

    taker.endInput();
    expect((await taker.done()).code).toBe(0);
    const again = openStore({ root });
    try {
      expect((await again.append(id, say("2"))).sequence).toBe(2);
    } finally {
      await again.close();
    }
  });

  it("does not crash the process that lost it", async () => {
    // A child that loses its lock while idle, then keeps working; proper-lockfile's default would throw from a timer.
    const { store, root } = await tempStore();
    const { id } = await store.create();
    await store.close();
    const child = new Child("lose-lock.ts", [root, id]);
    children.push(child);
    await child.waitForLine((l) => l === "holding");
    await rm(join(root, id, "events.jsonl.lock"), { recursive: true });
    child.endInput();
    const run = await child.done();
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split("\n")).toEqual(["holding", "LOCK_COMPROMISED", "appended 2"]);
  });
});
