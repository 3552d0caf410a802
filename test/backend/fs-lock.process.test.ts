import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import { isAgentTapeError } from "../../src/core/errors.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { event, readAll } from "../helpers/stored-events.js";
import { tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

describe("fs backend: the session lock across processes", () => {
  it("a lock held by another process is LOCKED here; once that process is killed, it is taken over", async () => {
    const root = await tempDir();
    const staleMs = 2000;
    const backend = fsBackend({ root, lockStaleMs: staleMs });
    await backend.createSession({ id: "s1", createdAt: "2025-01-01T00:00:00.000Z" }, [event("s1", 1)]);
    const holder = new Child("hold-session-lock.ts", [root, "s1", String(staleMs)]);
    children.push(holder);
    expect(await holder.waitForLine(() => true)).toBe("locked");

    const refused = await backend.lock("s1", { waitMs: 300 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isAgentTapeError(refused, "LOCKED")).toBe(true);

    holder.kill();
    await holder.done();
    const locked = await backend.lock("s1", { waitMs: 30_000 });
    expect(locked.held).toBe(true);
    expect(locked.lastSequence).toBe(1);
    await locked.append([event("s1", 2)], { sync: true });
    await locked.release();
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2]);
  });
});
