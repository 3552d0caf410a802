import { afterEach, describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import { isAgentTapeError } from "../../src/core/errors.js";
import { FixtureProcess, TempRoots, event, readAll } from "./helpers.js";

const temp = new TempRoots();
const children: FixtureProcess[] = [];
afterEach(async () => {
  await Promise.all(children.splice(0).map((child) => child.kill()));
  await temp.removeAll();
});

describe("fs backend: the session lock across processes", () => {
  it("a lock held by another process is LOCKED here; once that process is killed, it is taken over", async () => {
    const root = await temp.make();
    const staleMs = 2000;
    const backend = fsBackend({ root, lockStaleMs: staleMs });
    await backend.createSession({ id: "s1", createdAt: "2025-01-01T00:00:00.000Z" }, [event("s1", 1)]);
    const holder = new FixtureProcess("hold-session-lock.ts", [root, "s1", String(staleMs)]);
    children.push(holder);
    await holder.waitForLines(1);
    expect(holder.lines[0]).toBe("locked");

    const refused = await backend.lock("s1", { waitMs: 300 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isAgentTapeError(refused, "LOCKED")).toBe(true);

    await holder.kill();
    const locked = await backend.lock("s1", { waitMs: 30_000 });
    expect(locked.held).toBe(true);
    expect(locked.lastSequence).toBe(1);
    await locked.append([event("s1", 2)], true);
    await locked.release();
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2]);
  });

  it("two backends on one root exclude each other, as two processes would", async () => {
    const root = await temp.make();
    const one = fsBackend({ root });
    const two = fsBackend({ root });
    await one.createSession({ id: "s1", createdAt: "2025-01-01T00:00:00.000Z" });
    const held = await one.lock("s1");
    const refused = await two.lock("s1", { waitMs: 200 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isAgentTapeError(refused, "LOCKED")).toBe(true);
    await held.append([event("s1", 1)], true);
    await held.release();
    const next = await two.lock("s1", { waitMs: 5000 });
    expect(next.lastSequence).toBe(1);
    await next.release();
  });
});
