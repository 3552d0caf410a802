import { mkdir, rm, stat, utimes } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import { isAgentTapeError } from "../../src/core/errors.js";
import { event } from "../helpers/stored-events.js";
import { tempDir } from "../helpers/fixture.js";

// Across real processes: fs-lock.process.test.ts.
describe("fs backend: the session lock within one process", () => {
  it("two backends on one root exclude each other, as two processes would", async () => {
    const root = await tempDir();
    const one = fsBackend({ root });
    const two = fsBackend({ root });
    await one.createSession({ id: "s1", createdAt: "2025-01-01T00:00:00.000Z" });
    const held = await one.lock("s1");
    const refused = await two.lock("s1", { waitMs: 200 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isAgentTapeError(refused, "LOCKED")).toBe(true);
    await held.append([event("s1", 1)], { sync: true });
    await held.release();
    const next = await two.lock("s1", { waitMs: 5000 });
    expect(next.lastSequence).toBe(1);
    await next.release();
  });
});

describe("fs backend: which lock folder is ours", () => {
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const exists = (path: string) =>
    stat(path).then(
      () => true,
      () => false,
    );

  it("a lock folder replaced by another holder's is lost, even when the two folders' mtimes are equal", async () => {
    // proper-lockfile stamps a new lock with the next whole second + 5 ms, so two processes that take the lock
    // within the same second leave identical mtimes: the mtime alone cannot tell the two folders apart.
    const root = await tempDir();
    const backend = fsBackend({ root, lockStaleMs: 2000 });
    await backend.createSession({ id: "s1", createdAt: "2025-01-01T00:00:00.000Z" });
    const held = await backend.lock("s1");
    const lockDir = join(root, "s1", "events.jsonl.lock");
    const { mtime } = await stat(lockDir);
    await rm(lockDir, { recursive: true });
    await mkdir(lockDir);
    await utimes(lockDir, mtime, mtime);

    await pause(1600); // past one refresh (every max(1000, lockStaleMs / 4) ms)
    expect(held.held).toBe(false);
    const refused = await held.append([event("s1", 1)], { sync: true }).catch((error: unknown) => error);
    expect(isAgentTapeError(refused, "LOCK_COMPROMISED")).toBe(true);
    await held.release();
    expect(await exists(lockDir)).toBe(true);
    expect((await stat(lockDir)).mtime).toEqual(mtime); // never refreshed by the process that lost it
  });

  it("a lease that lapsed while nobody took it is refreshed on the spot and stays held", async () => {
    const root = await tempDir();
    const backend = fsBackend({ root, lockStaleMs: 2000 });
    await backend.createSession({ id: "s1", createdAt: "2025-01-01T00:00:00.000Z" });
    const held = await backend.lock("s1");
    // A blocked event loop: no refresh runs. Blocked in Atomics.wait, as a synchronous call blocks it, rather
    // than in a busy loop: the same 2 s without timers, without 2 s of CPU taken from the other tests.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2000);
    expect(held.held).toBe(true);
    await pause(2500); // the refresh timer runs again, more than once
    expect(held.held).toBe(true);
    await held.append([event("s1", 1)], { sync: true });
    await held.release();
    expect(await exists(join(root, "s1", "events.jsonl.lock"))).toBe(false);
  });
});
