import { readdir } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import { isAgentTapeError } from "../../src/core/errors.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { events, readAll } from "../helpers/stored-events.js";
import { tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

describe("fs backend: createSession is all at once", () => {
  it("callers racing for one id: one wins, the others get SESSION_EXISTS, no staging folder is left", async () => {
    const root = await tempDir();
    const backend = fsBackend({ root });
    const outcomes = await Promise.allSettled(
      ["first", "second", "third"].map((title) =>
        backend.createSession({ id: "s1", createdAt: "2025-01-01T00:00:00.000Z", title }, events("s1", 50)),
      ),
    );
    const won = outcomes.filter((o) => o.status === "fulfilled");
    const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost.every((o) => isAgentTapeError(o.reason, "SESSION_EXISTS"))).toBe(true);
    expect(await readdir(root)).toEqual(["s1"]);
    expect(await readAll(backend, "s1")).toEqual(events("s1", 50));
  });

  it("a process killed mid-create leaves each session absent or complete, every resolved one there", async () => {
    const perSession = 2000;
    for (let round = 0; round < 4; round++) {
      const root = await tempDir();
      const child = new Child("create-sessions.ts", [root, String(perSession)]);
      children.push(child);
      await child.waitForLine(() => true);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 150));
      child.kill();
      await child.done();
      const resolved = child.lines.filter((line) => line !== "");

      const backend = fsBackend({ root });
      const listed = (await backend.listSessionIds()).sort();
      // Every create that resolved is there; at most the one in flight besides.
      for (const id of resolved) expect(listed).toContain(id);
      const inFlight = `s${resolved.length}`;
      expect(listed.filter((id) => !resolved.includes(id))).toEqual(listed.includes(inFlight) ? [inFlight] : []);
      for (const id of listed) {
        expect(await backend.getSession(id)).toMatchObject({ id });
        expect((await readAll(backend, id)).length).toBe(perSession);
      }
      // Whatever the crash left in staging, the id can still be created (or already exists whole).
      if (!listed.includes(inFlight))
        await backend.createSession({ id: inFlight, createdAt: "2025-01-01T00:00:00.000Z" });
      expect(await backend.getSession(inFlight)).toMatchObject({ id: inFlight });
    }
  });
});
