import { readFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import { postgresBackend, SCHEMA_VERSION } from "../../src/backend/postgres/index.js";
import { sessionLockKeys } from "../../src/backend/postgres/lock.js";
import type { StorageBackend } from "../../src/backend/types.js";
import { isAgentTapeError } from "../../src/core/errors.js";
import type { StoredEvent } from "../../src/core/events.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { event, expectCode, range, readAll, record, withLock } from "../../src/testing/fixtures.js";
import { pgBackend, pgUrl, useSchemas } from "../helpers/postgres.js";
import { closeAfter, openStore, tempDir } from "../helpers/fixture.js";

// What only a PostgreSQL backend has to keep: schemas, versions, typed connection failures, the fence, readers
// paging past a cut, and lines byte for byte the fs backend's.
const schemas = useSchemas("pgbackend");
function backend(schema: string, options: Parameters<typeof pgBackend>[1] = {}): StorageBackend {
  const made = pgBackend(schema, options);
  closeAfter(made);
  return made;
}

describe("schemas", () => {
  it("two backends on different schemas never see each other's sessions", async () => {
    const [a, b] = [backend(schemas.make()), backend(schemas.make())];
    await a.createSession(record("same-id", "in a"), [event("same-id", 1)]);
    expect(await b.listSessionIds()).toEqual([]);
    expect(await b.getSession("same-id")).toBeUndefined();
    await b.createSession(record("same-id", "in b"));
    // Locks are per schema too: both hold "same-id" at once.
    const [la, lb] = [await a.lock("same-id", { waitMs: 0 }), await b.lock("same-id", { waitMs: 0 })];
    await lb.append([event("same-id", 1), event("same-id", 2)], { sync: true });
    await Promise.all([la.release(), lb.release()]);
    expect((await a.getSession("same-id"))?.title).toBe("in a");
    expect((await readAll(a, "same-id")).map((e) => e.sequence)).toEqual([1]);
    expect((await readAll(b, "same-id")).map((e) => e.sequence)).toEqual([1, 2]);
  });

  it("backends starting at once on a new schema make it once, all of them ready", async () => {
    const schema = schemas.make();
    const many = range(1, 6).map(() => backend(schema));
    await Promise.all(many.map((b, i) => b.createSession(record(`s${i}`))));
    expect((await many[0]!.listSessionIds()).sort()).toEqual(range(0, 5).map((i) => `s${i}`));
    const version = await schemas.admin().query(`SELECT version FROM "${schema}".schema_version`);
    expect(version.rows).toEqual([{ version: SCHEMA_VERSION }]);
  });

  it("a schema written by a newer version is refused with STORE_TOO_NEW, and nothing is changed", async () => {
    const schema = schemas.make();
    const first = backend(schema);
    await first.createSession(record("s1"), [event("s1", 1)]);
    await first.close();
    await schemas.admin().query(`UPDATE "${schema}".schema_version SET version = $1`, [SCHEMA_VERSION + 1]);
    const later = backend(schema);
    const error = await expectCode(later.listSessionIds(), "STORE_TOO_NEW");
    expect(error.message).toContain(schema);
    await expectCode(later.createSession(record("s2")), "STORE_TOO_NEW");
    const rows = await schemas.admin().query(`SELECT id FROM "${schema}".sessions`);
    expect(rows.rows).toEqual([{ id: "s1" }]);
  });

  it("a schema name that is not a plain identifier is refused with INVALID_ARGUMENT", () => {
    for (const schema of ['x"; DROP TABLE y; --', "Upper", "1starts-with-digit", ""])
      expect(() => postgresBackend({ connectionString: pgUrl(), schema })).toThrow(/schema name/);
  });
});

describe("failures are typed: STORAGE_FAILED with the driver's error as cause", () => {
  it("a server that is down", async () => {
    const down = postgresBackend({ connectionString: "postgres://postgres@127.0.0.1:1/test", schema: "x" });
    const error = await expectCode(down.listSessionIds(), "STORAGE_FAILED");
    expect((error as Error & { cause?: { code?: string } }).cause?.code).toBe("ECONNREFUSED");
    await down.close();
  });

  it("a connection string that does not parse, and a host that does not resolve", async () => {
    for (const connectionString of ["postgres://us%er@[::1", "postgres://postgres@no-such-host.invalid/test"]) {
      const bad = postgresBackend({ connectionString, schema: "x" });
      const error = await expectCode(bad.createSession(record("s1")), "STORAGE_FAILED");
      expect((error as Error).cause).toBeInstanceOf(Error);
      await bad.close();
    }
  });

  it("a role without rights to make the schema; and a database that does not exist", async () => {
    const admin = schemas.admin();
    await admin.query("DROP ROLE IF EXISTS agent_tape_no_rights");
    await admin.query("CREATE ROLE agent_tape_no_rights LOGIN PASSWORD 'no-rights'");
    try {
      const url = new URL(pgUrl());
      url.username = "agent_tape_no_rights";
      url.password = "no-rights";
      const weak = postgresBackend({ connectionString: url.href, schema: schemas.make() });
      const error = await expectCode(weak.createSession(record("s1")), "STORAGE_FAILED");
      expect((error as Error & { cause?: { code?: string } }).cause?.code).toBe("42501");
      expect(error.message).toMatch(/permission denied/);
      await weak.close();
      const missing = new URL(pgUrl());
      missing.pathname = "/no_such_database";
      const nowhere = postgresBackend({ connectionString: missing.href, schema: "x" });
      await expectCode(nowhere.listSessionIds(), "STORAGE_FAILED");
      await nowhere.close();
    } finally {
      await admin.query("DROP ROLE IF EXISTS agent_tape_no_rights");
    }
  });
});

describe("the lock fences", () => {
  it("a connection the pool hands out again and again does not gather error listeners", async () => {
    // One pooled connection held and released many times: each release used to add a listener to it, until Node
    // warned of a leak (MaxListenersExceededWarning) in any long-running worker.
    const pool = new pg.Pool({ connectionString: pgUrl(), max: 1 });
    pool.on("error", () => undefined);
    const b = postgresBackend({ pool, schema: schemas.make(), lockLeaseMs: 2000 });
    closeAfter(b);
    await b.createSession(record("s1"), [event("s1", 1)]);
    const listenersAfter = async (holds: number) => {
      for (let i = 0; i < holds; i++) await (await b.lock("s1")).release();
      const client = await pool.connect();
      const count = client.listenerCount("error");
      client.release();
      return count;
    };
    const afterOne = await listenersAfter(1);
    expect(await listenersAfter(20)).toBe(afterOne);
    await b.close();
    await pool.end();
  });

  it("a holder whose connection was cut writes nothing more: LOCK_COMPROMISED; the next holder goes on", async () => {
    const schema = schemas.make();
    const b = backend(schema);
    await b.createSession(record("s1"), [event("s1", 1)]);
    const first = await b.lock("s1");
    await first.append([event("s1", 2)], { sync: true });
    // The server ends the holder's connection (a network cut, a failover, an operator): its lock goes with it.
    await schemas.admin().query(
      `SELECT pg_terminate_backend(pid) FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND classid = $1 AND objid = $2 AND objsubid = 2`,
      sessionLockKeys(schema, "s1"),
    );
    const second = await b.lock("s1", { waitMs: 10_000 });
    await expectCode(
      first.append([event("s1", 3, { role: "user", content: "late" })], { sync: true }),
      "LOCK_COMPROMISED",
    );
    expect(first.held).toBe(false);
    await second.append([event("s1", 3)], { sync: true });
    await second.release();
    await first.release();
    expect(await readAll(b, "s1")).toEqual(range(1, 3).map((n) => event("s1", n)));
  });

  it("a write under an epoch that moved on (another acquisition since) is refused: LOCK_COMPROMISED", async () => {
    const schema = schemas.make();
    const b = backend(schema);
    await b.createSession(record("s1"), [event("s1", 1)]);
    const held = await b.lock("s1");
    // What a take-over does first: bump the epoch. The old holder's connection is still up here, so only
    // the epoch check in its own statements can stop it.
    await schemas.admin().query(`UPDATE "${schema}".sessions SET lock_epoch = lock_epoch + 1 WHERE id = 's1'`);
    await expectCode(held.append([event("s1", 2), event("s1", 3)], { sync: true }), "LOCK_COMPROMISED");
    await expectCode(held.writeRecord("late", 1), "LOCK_COMPROMISED");
    await held.release();
    expect((await readAll(b, "s1")).map((e) => e.sequence)).toEqual([1]);
    expect(await b.listRecords("s1")).toEqual([]);
  });

  it("a pool whose statements reach different server connections (transaction-mode pooler) is refused", async () => {
    const real = new pg.Pool({ connectionString: pgUrl(), max: 4 });
    // A client that sends each statement to the next of two connections, as PgBouncer in transaction mode does.
    const pooler = {
      query: real.query.bind(real),
      on: () => pooler,
      async connect() {
        const clients = [await real.connect(), await real.connect()];
        let turn = 0;
        let inTransaction = false;
        return {
          // A transaction stays on one server connection; each statement outside one goes to the next.
          query: (...args: unknown[]) => {
            const text = String(args[0]);
            if (/^BEGIN/.test(text)) inTransaction = true;
            const client = clients[inTransaction ? turn % 2 : turn++ % 2]!;
            if (/^(COMMIT|ROLLBACK)/.test(text)) inTransaction = false;
            return (client.query as (...a: unknown[]) => unknown)(...args);
          },
          on: () => undefined,
          off: () => undefined,
          release: () => {
            for (const c of clients) c.release();
          },
        };
      },
    };
    const b = postgresBackend({ pool: pooler as unknown as pg.Pool, schema: schemas.make() });
    await b.createSession(record("s1"));
    const error = await expectCode(b.lock("s1", { waitMs: 0 }), "STORAGE_FAILED");
    expect(error.message).toMatch(/transaction mode/);
    await b.close();
    await real.end();
  });
});

describe("the log", () => {
  it("a line's bytes are the fs backend's, batch marks and closed batches included", async () => {
    const root = await tempDir("agent-tape-pg-lines-");
    const schema = schemas.make();
    const stores = [openStore({ backend: fsBackend({ root }) }), openStore({ backend: backend(schema) })];
    for (const store of stores) {
      await store.create({ id: "same" });
      await store.append("same", { type: "message", payload: { role: "user", content: 'quotes " and \n ünï 🎉' } });
      await store.appendMany(
        "same",
        range(1, 5).map((i) => ({ type: "message" as const, payload: { role: "assistant", content: `part ${i}` } })),
      );
      // inside the batch: closes it
      await lockedAccess(store).withLockedSession("same", (locked) => locked.truncateAfter(4));
    }
    const fsText = await readFile(join(root, "same", "events.jsonl"), "utf8");
    const rows = await schemas.admin().query<{ line: string }>(
      `SELECT line FROM "${schema}".events e JOIN "${schema}".sessions s USING (incarnation)
          WHERE s.id = 'same' ORDER BY sequence`,
    );
    const pgText = rows.rows.map((r) => `${r.line}\n`).join("");
    // createdAt and ids differ between the two stores; everything else, byte for byte.
    const normal = (text: string) =>
      text.replace(/"id":"[^"]*"/g, '"id":"-"').replace(/"createdAt":"[^"]*"/g, '"createdAt":"-"');
    expect(normal(pgText)).toBe(normal(fsText));
    expect(pgText).toContain('"batch":[2,4]');
    for (const store of stores) await store.close();
  });

  it("an archived log range is the fs backend's byte for byte: same length, sha256 and lines", async () => {
    const root = await tempDir("agent-tape-pg-archive-");
    const backends = [fsBackend({ root }), backend(schemas.make())];
    const archives = [];
    for (const b of backends) {
      await b.createSession(record("same"), [event("same", 1, { role: "user", content: 'quotes " and \n ünï 🎉' })]);
      archives.push(
        await withLock(b, "same", async (locked) => {
          await locked.append(range(2, 6).map((n) => event("same", n))); // one batch: every line marked
          await locked.truncateAfter(4); // inside the batch: its last kept line is closed
          await locked.append([event("same", 7), event("same", 8)], { separately: true });
          return { log: await locked.archiveLogAfter!(1, "rewind-archive-9"), bytes: await bytesOf(b) };
        }),
      );
    }
    const [onFs, onPg] = archives;
    expect(onPg!.log).toEqual(onFs!.log);
    expect(onPg!.bytes.equals(onFs!.bytes)).toBe(true);
    expect(onFs!.log.events).toBe(5);
    expect(onFs!.bytes.toString("utf8")).toContain('"batch":[2,4]');
    await backends[0]!.close();

    async function bytesOf(b: StorageBackend): Promise<Buffer> {
      const chunks: Buffer[] = [];
      for await (const chunk of b.readArchivedLog!("same", "rewind-archive-9")) chunks.push(Buffer.from(chunk));
      return Buffer.concat(chunks);
    }
  });

  it("a reader paused between pages: a cut below what it read is TAPE_REWOUND; one above it reads on", async () => {
    const b = backend(schemas.make());
    const total = 4500; // more than two pages of 2000
    await b.createSession(
      record("s1"),
      range(1, total).map((n) => event("s1", n)),
    );
    const below = b.readEventBatches!("s1")[Symbol.asyncIterator]();
    const firstPage = (await below.next()).value!;
    expect(firstPage.at(-1)!.sequence).toBe(2000);
    await withLock(b, "s1", async (locked) => {
      await locked.truncateAfter(100);
      await locked.append(
        range(total + 1, total + 3000).map((n) => event("s1", n)),
        { sync: true },
      );
    });
    const error = await below.next().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAgentTapeError(error, "TAPE_REWOUND")).toBe(true);

    // The log is now 1-100 and 4501-7500; a new reader's first page ends at 6400.
    const above = b.readEventBatches!("s1")[Symbol.asyncIterator]();
    const seen = ((await above.next()).value as StoredEvent[]).map((e) => e.sequence);
    expect(seen.at(-1)).toBe(6400);
    await withLock(b, "s1", async (locked) => {
      await locked.truncateAfter(7000); // above what was handed out
      await locked.append([event("s1", 9000)], { sync: true });
    });
    for (let page = await above.next(); !page.done; page = await above.next())
      seen.push(...page.value.map((e) => e.sequence));
    expect(seen).toEqual([...range(1, 100), ...range(total + 1, 7000), 9000]);
  });
});
