import { describe, expect, it } from "vitest";
import { openStore } from "../helpers/fixture.js";
import { pgBackend, useSchemas } from "../helpers/postgres.js";

// A store keeps each session's lock between writes for `lockIdleMs` (a lease), and on PostgreSQL a held lock keeps
// one pooled connection. A store writing to more sessions than its pool has connections must give up an idle
// lease to take the next lock, not wait for one to run out (docs/postgres.md, "The lock").

const schemas = useSchemas("idle_leases");
const IDLE_MS = 20_000;
const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });

describe("idle leases on a small pool", () => {
  it("a store writing to more sessions than its pool holds gives up its idle leases, oldest first", async () => {
    const schema = schemas.make();
    const store = openStore({ backend: pgBackend(schema, { maxConnections: 3 }), lockIdleMs: IDLE_MS });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const { id } = await store.create();
      await store.append(id, say(`session ${i}`));
      ids.push(id);
      // Waiting for an idle lease to run out would take IDLE_MS.
      expect(Date.now() - started, `session ${i}`).toBeLessThan(IDLE_MS / 4);
    }
    // The first session's lease was the one given up first: another store takes its lock at once.
    const other = openStore({ backend: pgBackend(schema), lockWaitMs: 0 });
    await expect(other.append(ids[0]!, say("from another store"))).resolves.toMatchObject({ sequence: 2 });
    // The newest is still held.
    await expect(other.append(ids[4]!, say("from another store"))).rejects.toMatchObject({ code: "LOCKED" });
    await store.append(ids[4]!, say("still ours"));
  }, 60_000);
});
