import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, inject } from "vitest";
import { postgresBackend, type PostgresBackendOptions } from "../../src/backend/postgres/index.js";
import type { StorageBackend } from "../../src/backend/types.js";

// What a PostgreSQL test file needs: the server's URL (test/setup/postgres-server.ts), a schema of its own that is
// dropped when the file ends, and backends on it.

/** The URL of the test server. */
export function pgUrl(): string {
  const url = inject("pgUrl");
  if (!url) throw new Error("No PostgreSQL server for the tests: see test/setup/postgres-server.ts");
  return url;
}

/** A fresh schema name for this file; each name is dropped (CASCADE) when the file's tests end. */
export function useSchemas(prefix: string): { make: () => string; admin: () => pg.Pool } {
  const made: string[] = [];
  let pool: pg.Pool | undefined;
  const admin = () => {
    if (pool === undefined) {
      pool = new pg.Pool({ connectionString: pgUrl(), max: 2 });
      pool.on("error", () => undefined); // once per pool: a listener at each call piled up
    }
    return pool;
  };
  afterAll(async () => {
    const p = admin();
    for (const schema of made) await p.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await p.end();
    pool = undefined;
  });
  return {
    admin,
    make() {
      const schema = `${prefix}_${process.pid}_${randomBytes(4).toString("hex")}`;
      made.push(schema);
      return schema;
    },
  };
}

/** A backend on a new schema of the test server. */
export function pgBackend(schema: string, options: Partial<PostgresBackendOptions> = {}): StorageBackend {
  return postgresBackend({ connectionString: pgUrl(), schema, lockLeaseMs: 2000, ...options });
}
