import { StoreTooNewError } from "../../core/errors.js";
import type { Queryable } from "./queryable.js";
import { advisoryKeys } from "./names.js";

/**
 * The schema's version this code writes. A store at a lower version is migrated on first use; one at a
 * higher version (written by a newer agent-tape) is refused with STORE_TOO_NEW, before anything is read.
 */
export const SCHEMA_VERSION = 1;

/**
 * The steps from each version to the next: MIGRATIONS[n] takes a schema at version n to n + 1. Each runs in
 * the migration's transaction, so a crash mid-way leaves the version it started from (docs/postgres.md).
 */
const MIGRATIONS: readonly ((s: string) => string)[] = [
  // 0 -> 1: the first tables.
  (s) => `
    -- A session's incarnation is its identity: a deleted id made again is a new session with a new one, so
    -- nothing of the old one (events, blobs, a late writer's fence) can attach to it.
    CREATE SEQUENCE ${s}.incarnations;
    CREATE TABLE ${s}.sessions (
      id text PRIMARY KEY,
      incarnation bigint NOT NULL UNIQUE DEFAULT nextval('${s}.incarnations'),
      record text NOT NULL,
      -- Bumped by each lock acquisition; every write under the lock checks it in the same statement.
      lock_epoch bigint NOT NULL DEFAULT 0,
      lock_holder text
    );
    -- The log: one row per event, the exact line the fs backend writes (batch mark included), keyed by
    -- sequence. No counter beside it: the next sequence is the highest here, read under the lock.
    CREATE TABLE ${s}.events (
      incarnation bigint NOT NULL REFERENCES ${s}.sessions (incarnation) ON DELETE CASCADE,
      sequence bigint NOT NULL CHECK (sequence > 0),
      line text NOT NULL,
      PRIMARY KEY (incarnation, sequence)
    );
    -- A reader's page is a LIMIT over this key: with no statistics yet (a new table) the planner sorts every
    -- row after the reader's place instead of walking the index. Analyzed early and often, it walks the index.
    ALTER TABLE ${s}.events SET (autovacuum_analyze_threshold = 1000, autovacuum_analyze_scale_factor = 0.02);
    -- Every cut of the log (a rewind's truncation): a reader paging by sequence compares the lowest cut
    -- since it started with what it already handed out (TAPE_REWOUND).
    CREATE TABLE ${s}.cuts (
      incarnation bigint NOT NULL REFERENCES ${s}.sessions (incarnation) ON DELETE CASCADE,
      cut bigserial,
      after_sequence bigint NOT NULL,
      PRIMARY KEY (incarnation, cut)
    );
    -- Blobs as the fs backend's files hold them (the same codec: raw, or deflate-raw behind a marker).
    CREATE TABLE ${s}.blobs (
      incarnation bigint NOT NULL REFERENCES ${s}.sessions (incarnation) ON DELETE CASCADE,
      hash text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
      stored bytea NOT NULL,
      PRIMARY KEY (incarnation, hash)
    );
    CREATE TABLE ${s}.records (
      incarnation bigint NOT NULL REFERENCES ${s}.sessions (incarnation) ON DELETE CASCADE,
      name text NOT NULL,
      value text NOT NULL,
      PRIMARY KEY (incarnation, name)
    );
    -- A rewind's archive: the log's bytes after the cut point, in parts, as the fs backend copies them.
    CREATE TABLE ${s}.archived_logs (
      incarnation bigint NOT NULL REFERENCES ${s}.sessions (incarnation) ON DELETE CASCADE,
      name text NOT NULL,
      part integer NOT NULL,
      bytes bytea NOT NULL,
      PRIMARY KEY (incarnation, name, part)
    );
  `,
];

/**
 * Makes the schema ready: a fast look at its version, then (when missing or older) a migration under a
 * transaction-level advisory lock, so two processes starting at once migrate once. Idempotent.
 */
export async function prepareSchema(db: Queryable, schema: string, quoted: string): Promise<void> {
  if ((await versionOf(db, schema, quoted)) === SCHEMA_VERSION) return;
  const [k1, k2] = advisoryKeys("agent-tape migrations", schema);
  await db.query("BEGIN");
  try {
    await db.query("SELECT pg_advisory_xact_lock($1, $2)", [k1, k2]);
    await db.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
    await db.query(
      `CREATE TABLE IF NOT EXISTS ${quoted}.schema_version (
         one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL)`,
    );
    const found = await db.query<{ version: number }>(`SELECT version FROM ${quoted}.schema_version`);
    const from = found.rows[0]?.version ?? 0;
    if (from > SCHEMA_VERSION) throw new StoreTooNewError(`in schema "${schema}"`, from, SCHEMA_VERSION);
    for (let version = from; version < SCHEMA_VERSION; version++) await db.query(MIGRATIONS[version]!(quoted));
    await db.query(
      `INSERT INTO ${quoted}.schema_version (version) VALUES ($1) ON CONFLICT (one) DO UPDATE SET version = $1`,
      [SCHEMA_VERSION],
    );
    await db.query("COMMIT");
  } catch (error) {
    await db.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

/** The schema's version, 0 when it has none yet; STORE_TOO_NEW when above this code's. */
async function versionOf(db: Queryable, schema: string, quoted: string): Promise<number> {
  const exists = await db.query<{ present: boolean }>("SELECT to_regclass($1) IS NOT NULL AS present", [
    `${quoted}.schema_version`,
  ]);
  if (!exists.rows[0]?.present) return 0;
  const found = await db.query<{ version: number }>(`SELECT version FROM ${quoted}.schema_version`);
  const version = found.rows[0]?.version ?? 0;
  if (version > SCHEMA_VERSION) throw new StoreTooNewError(`in schema "${schema}"`, version, SCHEMA_VERSION);
  return version;
}
