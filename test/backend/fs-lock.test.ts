import { afterEach, describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import { isAgentTapeError } from "../../src/core/errors.js";
import { event } from "../helpers/stored-events.js";
import { TempRoots } from "../helpers/temp-root.js";

const temp = new TempRoots();
afterEach(() => temp.removeAll());

// Across real processes: fs-lock.process.test.ts.
describe("fs backend: the session lock within one process", () => {
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
    await held.append([event("s1", 1)], { sync: true });
    await held.release();
    const next = await two.lock("s1", { waitMs: 5000 });
    expect(next.lastSequence).toBe(1);
    await next.release();
  });
});
