import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { postgresBackend } from "../../src/backend/postgres/index.js";
import { blob, event, pause, record } from "../../src/testing/fixtures.js";
import { closeAfter } from "../helpers/fixture.js";
import { pgUrl, useSchemas } from "../helpers/postgres.js";

// One statement at a time on a connection (docs/postgres.md, "The lock"): `pg` queues a second query sent while
// one runs, warns about it, and its next major version refuses it. A held lock's connection is shared by every
// write under the lock and by the lease's heartbeat, so the backend must put them in line itself. Every client
// of the pool here counts the statements it was handed while another was still running.

const schemas = useSchemas("one_query");
const pools: pg.Pool[] = [];
afterAll(async () => {
  for (const pool of pools) await pool.end();
});

/** A backend over a pool whose clients record the most statements each had running at once. */
function watchedBackend(lockLeaseMs: number) {
  const seen = { mostAtOnce: 0, statements: 0 };
  const pool = new pg.Pool({ connectionString: pgUrl(), max: 4 });
  pool.on("error", () => undefined);
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    let running = 0;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      seen.statements++;
      seen.mostAtOnce = Math.max(seen.mostAtOnce, ++running);
      // A query object of its own (the lock's named statements, src/backend/postgres/lock.ts): done at its callback.
      const submitted = args[0] as { submit?: unknown; callback?: (...r: unknown[]) => unknown };
      if (typeof submitted?.submit === "function" && typeof submitted.callback === "function") {
        const done = submitted.callback;
        submitted.callback = (...results: unknown[]) => {
          running--;
          return done(...results);
        };
        return query(...args);
      }
      const last = args.length - 1;
      const callback = args[last];
      if (typeof callback === "function")
        args[last] = (...results: unknown[]) => {
          running--;
          return (callback as (...r: unknown[]) => unknown)(...results);
        };
      const result = query(...args);
      if (typeof callback !== "function")
        void (result as Promise<unknown>).then(
          () => running--,
          () => running--,
        );
      return result;
    };
  });
  pools.push(pool);
  const schema = schemas.make();
  const backend = postgresBackend({ pool, schema, lockLeaseMs });
  closeAfter(backend);
  return { seen, backend, schema };
}

describe("one statement at a time on a lock's connection", () => {
  it("writes made at once under one lock reach its connection one after another, every one done", async () => {
    const { seen, backend } = watchedBackend(2000);
    await backend.createSession(record("s1"), [event("s1", 1)]);
    const locked = await backend.lock("s1");
    try {
      // As a rewind stores its undo blobs: several writeBlob calls at once on the one LockedSession.
      const blobs = Array.from({ length: 8 }, (_, i) => blob(`undo ${i}`));
      await Promise.all([
        ...blobs.map((b) => locked.writeBlob(b.hash, b.bytes, { durable: false })),
        locked.writeRecord("r1", { at: 1 }),
        locked.append([event("s1", 2)], { sync: true }),
      ]);
      expect(seen.mostAtOnce, "statements one connection had running at once").toBe(1);
      expect((await backend.listBlobs("s1")).sort()).toEqual(blobs.map((b) => b.hash).sort());
      expect(await backend.readRecord("s1", "r1")).toEqual({ at: 1 });
      expect((await backend.lastEvent("s1"))?.sequence).toBe(2);
    } finally {
      await locked.release();
    }
  });

  it("the heartbeat waits while a write is stuck on the server: never a second statement beside it", async () => {
    // Lease 1000 ms: a heartbeat every 333 ms. The write is held up for over a second by a row lock another
    // connection holds on the session's row (the events' foreign key has to share-lock it).
    const { seen, backend, schema } = watchedBackend(1000);
    await backend.createSession(record("s1"), [event("s1", 1)]);
    const locked = await backend.lock("s1");
    const blocker = await schemas.admin().connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query(`SELECT 1 FROM "${schema}".sessions WHERE id = 's1' FOR UPDATE`);
      const append = locked.append([event("s1", 2)], { sync: true });
      await pause(1200);
      await blocker.query("COMMIT");
      await append;
      expect(seen.mostAtOnce, "statements one connection had running at once").toBe(1);
      expect((await backend.lastEvent("s1"))?.sequence).toBe(2);
    } finally {
      await blocker.query("ROLLBACK").catch(() => undefined);
      blocker.release();
      await locked.release();
    }
  });
});
