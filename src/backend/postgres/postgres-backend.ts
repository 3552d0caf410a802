import pg from "pg";
import type { Pool, PoolClient } from "pg";
import { serializeEvent } from "../../core/envelope.js";
import {
  InvalidArgumentError,
  SessionExistsError,
  SessionNotFoundError,
  StorageFailedError,
  StoreTamperedError,
} from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import { assertSessionId } from "../../core/ids.js";
import { decodeBlob } from "../fs/blob-codec.js";
import { isBlobHash, isRecordName } from "../names.js";
import { withTypedStorageErrors } from "../typed-storage-errors.js";
import type {
  BlobReadOptions,
  CreateSessionOptions,
  LockOptions,
  LockedSession,
  NewSessionEvents,
  ReadEventsOptions,
  SessionRecord,
  SignalOption,
  StorageBackend,
  StorageUsage,
} from "../types.js";
import { archivedLogParts } from "./archive.js";
import { acquireSessionLock, othersWaitingFor } from "./lock.js";
import { PgLockedSession } from "./locked-session.js";
import { lastLoggedEvent, readLogPages } from "./log.js";
import { quotedSchema } from "./names.js";
import { isConnectionLost, typedPostgresError } from "./pg-errors.js";
import { prepareSchema } from "./schema.js";

export interface PostgresBackendOptions {
  /**
   * A `pg` Pool to use (yours: `close()` leaves it open). It must reach PostgreSQL directly or through a
   * session-mode pooler: a session lock is held on one connection. Give this or `connectionString`.
   */
  pool?: Pool;
  /** `postgres://user:password@host:port/database`: the backend makes (and `close()` ends) its own pool. */
  connectionString?: string;
  /**
   * The schema the tables live in, created on first use: one per tenant, or per test. Lowercase letters,
   * digits and `_`. @default "agent_tape"
   */
  schema?: string;
  /**
   * How long a holder may go silent (a paused or frozen process) before the server shuts its connection and
   * the lock passes on (idle_session_timeout); the holder then writes nothing more (LOCK_COMPROMISED). A holder
   * that is alive keeps its lease without writing (a query every third of it). Minimum 1000. @default 5000
   */
  lockLeaseMs?: number;
  /** How long `lock` waits for another holder before LOCKED, when the caller gives no `waitMs`. @default 15000 */
  lockWaitMs?: number;
  /** Connections of the pool the backend makes (each held lock keeps one). @default 10 */
  maxConnections?: number;
}

export const DEFAULT_SCHEMA = "agent_tape";

/**
 * A backend that keeps sessions in PostgreSQL (docs/postgres.md): many processes on many machines share them,
 * each session's lock is a lease that fences, an `appendMany` and a truncation are transactions. Its tables are
 * created and migrated on first use; a schema written by a newer agent-tape is refused (STORE_TOO_NEW).
 */
export function postgresBackend(options: PostgresBackendOptions): StorageBackend {
  if ((options.pool === undefined) === (options.connectionString === undefined))
    throw new InvalidArgumentError("postgresBackend needs exactly one of `pool` and `connectionString`.");
  return withTypedStorageErrors(new PostgresBackend(options), typedPostgresError);
}

class PostgresBackend implements StorageBackend {
  readonly name = "postgres";
  private readonly schema: string;
  private readonly s: string;
  private readonly leaseMs: number;
  private readonly waitMs: number;
  private ownPool: Pool | undefined;
  private prepared: Promise<Pool> | undefined;
  private readonly openLocks = new Set<LockedSession>();

  /**
   * Each held lock keeps a pooled connection for the whole hold; one connection stays free for reads and
   * creates, so a store with idle leases on many sessions gives the oldest up instead of exhausting the pool.
   */
  get maxHeldLocks(): number {
    const size = this.options.pool?.options.max ?? this.options.maxConnections ?? 10;
    return Math.max(1, size - 1);
  }

  constructor(private readonly options: PostgresBackendOptions) {
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    this.s = quotedSchema(this.schema);
    this.leaseMs = Math.max(1000, options.lockLeaseMs ?? 5000);
    this.waitMs = options.lockWaitMs ?? 15_000;
  }

  /** The pool, once the schema is ready (made or migrated on first use; again after a failed try). */
  private ready(): Promise<Pool> {
    this.prepared ??= (async () => {
      let client: PoolClient;
      let pool: Pool;
      try {
        pool = this.pool();
        client = await pool.connect();
      } catch (error) {
        throw cannotConnect(error);
      }
      try {
        await prepareSchema(client, this.schema, this.s);
      } finally {
        client.release();
      }
      return pool;
    })().catch((error: unknown) => {
      this.prepared = undefined;
      throw error;
    });
    return this.prepared;
  }

  /**
   * The pool, for a call about session `id`: the one place a session id meets the database, so the id is checked
   * here (INVALID_SESSION_ID), as the fs backend checks it where it becomes a path (SessionLayout.dir); an aborted
   * signal stops the call before any query.
   */
  private async poolFor(id: string, signal?: AbortSignal): Promise<Pool> {
    assertSessionId(id);
    signal?.throwIfAborted();
    return this.ready();
  }

  private pool(): Pool {
    if (this.options.pool) return this.options.pool;
    if (!this.ownPool) {
      const pool = new pg.Pool({
        connectionString: this.options.connectionString,
        max: this.options.maxConnections ?? 10,
        // Let the process exit with the pool idle, as it does with an fs backend nobody closed.
        allowExitOnIdle: true,
      });
      // An idle connection the server shut (a restart) is dropped by the pool; unheard, the event would crash.
      pool.on("error", () => undefined);
      this.ownPool = pool;
    }
    return this.ownPool;
  }

  async createSession(
    record: SessionRecord,
    events: NewSessionEvents = [],
    options: CreateSessionOptions = {},
  ): Promise<void> {
    const pool = await this.poolFor(record.id, options.signal);
    const s = this.s;
    const client = await pool.connect();
    let failed: Error | undefined;
    try {
      // One transaction: readers see the session with its whole log and blobs, or not at all.
      await client.query("BEGIN");
      let incarnation: string;
      try {
        const made = await client.query<{ incarnation: string }>(
          `INSERT INTO ${s}.sessions (id, record) VALUES ($1, $2) RETURNING incarnation`,
          [record.id, JSON.stringify(record)],
        );
        incarnation = made.rows[0]!.incarnation;
      } catch (error) {
        if ((error as { code?: unknown }).code === "23505") throw new SessionExistsError(record.id);
        throw error;
      }
      let previous = 0;
      let sequences: number[] = [];
      let lines: string[] = [];
      const flush = async () => {
        options.signal?.throwIfAborted();
        await client.query(
          `INSERT INTO ${s}.events (incarnation, sequence, line)
           SELECT $1, u.sequence, u.line FROM unnest($2::bigint[], $3::text[]) AS u(sequence, line)`,
          [incarnation, sequences, lines],
        );
        sequences = [];
        lines = [];
      };
      for await (const event of events) {
        if (!Number.isSafeInteger(event.sequence) || event.sequence <= previous)
          throw new InvalidArgumentError(
            `Event sequence ${event.sequence} does not follow ${previous} in the new session "${record.id}".`,
          );
        previous = event.sequence;
        sequences.push(event.sequence);
        lines.push(serializeEvent(event));
        if (sequences.length >= CREATE_ROWS) await flush();
      }
      if (sequences.length > 0) await flush();
      if (options.blobsFrom) {
        assertSessionId(options.blobsFrom.sessionId);
        // Copied inside the database: a fork of thousands of blobs is one statement, no bytes through here.
        await client.query(
          `INSERT INTO ${s}.blobs (incarnation, hash, stored)
           SELECT $1, b.hash, b.stored FROM ${s}.blobs b JOIN ${s}.sessions p ON p.incarnation = b.incarnation
            WHERE p.id = $2 AND b.hash = ANY($3::text[])`,
          [incarnation, options.blobsFrom.sessionId, [...new Set(options.blobsFrom.hashes)].filter(isBlobHash)],
        );
      }
      await client.query("COMMIT");
    } catch (error) {
      failed = error as Error;
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    } finally {
      client.release(failed && isConnectionLost(failed) ? failed : undefined);
    }
  }

  async getSession(id: string, options: SignalOption = {}): Promise<SessionRecord | undefined> {
    const pool = await this.poolFor(id, options.signal);
    const found = await pool.query<{ record: string }>(`SELECT record FROM ${this.s}.sessions WHERE id = $1`, [id]);
    const text = found.rows[0]?.record;
    if (text === undefined) return undefined;
    const value = this.parseJson(id, "its session record", text) as Partial<SessionRecord> | null;
    if (typeof value !== "object" || value === null || Array.isArray(value) || value.id !== id)
      throw new StoreTamperedError(id, `${this.schema}.sessions holds a record that is not this session's`);
    return value as SessionRecord;
  }

  async listSessionIds(options: SignalOption = {}): Promise<string[]> {
    options.signal?.throwIfAborted();
    const pool = await this.ready();
    return (await pool.query<{ id: string }>(`SELECT id FROM ${this.s}.sessions`)).rows.map((row) => row.id);
  }

  async deleteSession(id: string, options: SignalOption = {}): Promise<boolean> {
    const pool = await this.poolFor(id, options.signal);
    // Its events, cuts, blobs and records go with it (ON DELETE CASCADE), in the same transaction.
    const deleted = await pool.query(`DELETE FROM ${this.s}.sessions WHERE id = $1`, [id]);
    return (deleted.rowCount ?? 0) > 0;
  }

  async lastEvent(id: string, options: SignalOption = {}): Promise<StoredEvent | undefined> {
    return lastLoggedEvent(await this.poolFor(id, options.signal), this.s, this.schema, id);
  }

  async *readEvents(id: string, options: ReadEventsOptions = {}): AsyncGenerator<StoredEvent> {
    for await (const page of this.readEventBatches(id, options)) yield* page;
  }

  async *readEventBatches(id: string, options: ReadEventsOptions = {}): AsyncGenerator<StoredEvent[]> {
    yield* readLogPages(await this.poolFor(id), this.s, this.schema, id, options);
  }

  async readBlob(id: string, hash: string, options: BlobReadOptions = {}): Promise<Buffer | undefined> {
    const pool = await this.poolFor(id, options.signal);
    if (!isBlobHash(hash)) return undefined;
    const found = await pool.query<{ stored: Buffer }>(
      `SELECT b.stored FROM ${this.s}.blobs b JOIN ${this.s}.sessions x ON x.incarnation = b.incarnation
        WHERE x.id = $1 AND b.hash = $2`,
      [id, hash],
    );
    const stored = found.rows[0]?.stored;
    // A row longer than its snapshot says is cut as the fs backend cuts a file: never inflated past maxBytes + 1.
    return stored === undefined ? undefined : decodeBlob(stored, options.maxBytes);
  }

  async storedBlobBytes(id: string, hash: string, options: SignalOption = {}): Promise<number | undefined> {
    const pool = await this.poolFor(id, options.signal);
    if (!isBlobHash(hash)) return undefined;
    const found = await pool.query<{ bytes: number }>(
      `SELECT octet_length(b.stored) AS bytes FROM ${this.s}.blobs b
         JOIN ${this.s}.sessions x ON x.incarnation = b.incarnation WHERE x.id = $1 AND b.hash = $2`,
      [id, hash],
    );
    return found.rows[0]?.bytes;
  }

  async listBlobs(id: string, options: SignalOption = {}): Promise<string[]> {
    const pool = await this.poolFor(id, options.signal);
    const found = await pool.query<{ hash: string }>(
      `SELECT b.hash FROM ${this.s}.blobs b JOIN ${this.s}.sessions x ON x.incarnation = b.incarnation
        WHERE x.id = $1`,
      [id],
    );
    return found.rows.map((row) => row.hash);
  }

  async readRecord(id: string, name: string, options: SignalOption = {}): Promise<unknown> {
    const pool = await this.poolFor(id, options.signal);
    if (!isRecordName(name)) return undefined;
    const found = await pool.query<{ value: string }>(
      `SELECT r.value FROM ${this.s}.records r JOIN ${this.s}.sessions x ON x.incarnation = r.incarnation
        WHERE x.id = $1 AND r.name = $2`,
      [id, name],
    );
    const text = found.rows[0]?.value;
    return text === undefined ? undefined : this.parseJson(id, `its record "${name}"`, text);
  }

  async *readArchivedLog(id: string, name: string, options: SignalOption = {}): AsyncIterable<Buffer> {
    const pool = await this.poolFor(id, options.signal);
    if (!isRecordName(name)) return;
    yield* archivedLogParts(pool, this.s, { id }, name, options.signal);
  }

  async listRecords(id: string, options: SignalOption = {}): Promise<string[]> {
    const pool = await this.poolFor(id, options.signal);
    const found = await pool.query<{ name: string }>(
      `SELECT r.name FROM ${this.s}.records r JOIN ${this.s}.sessions x ON x.incarnation = r.incarnation
        WHERE x.id = $1`,
      [id],
    );
    return found.rows.map((row) => row.name);
  }

  async sizeOf(id: string, options: SignalOption = {}): Promise<number> {
    const usage = await this.measure(await this.poolFor(id, options.signal), id);
    return usage?.total ?? 0;
  }

  async usage(id: string, options: SignalOption = {}): Promise<StorageUsage> {
    const usage = await this.measure(await this.poolFor(id, options.signal), id);
    if (!usage) throw new SessionNotFoundError(id);
    return usage;
  }

  /** The session's bytes as the fs backend would count its files: lines with their newlines, blobs as stored. */
  private async measure(pool: Pool, id: string): Promise<StorageUsage | undefined> {
    const s = this.s;
    const found = await pool.query<{ log: string; blobs: string; count: string; records: string; other: string }>(
      `SELECT (SELECT coalesce(sum(octet_length(line) + 1), 0) FROM ${s}.events
                WHERE incarnation = x.incarnation) AS log,
              (SELECT coalesce(sum(octet_length(stored)), 0) FROM ${s}.blobs
                WHERE incarnation = x.incarnation) AS blobs,
              (SELECT count(*) FROM ${s}.blobs WHERE incarnation = x.incarnation) AS count,
              (SELECT coalesce(sum(octet_length(value)), 0) FROM ${s}.records WHERE incarnation = x.incarnation)
              + (SELECT coalesce(sum(octet_length(bytes)), 0) FROM ${s}.archived_logs
                  WHERE incarnation = x.incarnation) AS records,
              octet_length(x.record) AS other
         FROM ${s}.sessions x WHERE x.id = $1`,
      [id],
    );
    const row = found.rows[0];
    if (!row) return undefined;
    const [log, blobs, records, other] = [row.log, row.blobs, row.records, row.other].map(Number) as [
      number,
      number,
      number,
      number,
    ];
    return { log, blobs, blobCount: Number(row.count), records, other, total: log + blobs + records + other };
  }

  async lock(id: string, options: LockOptions = {}): Promise<LockedSession> {
    const pool = await this.poolFor(id);
    const held = await acquireSessionLock(pool, this.s, this.schema, id, {
      leaseMs: this.leaseMs,
      waitMs: options.waitMs ?? this.waitMs,
      onWait: options.onWait,
      signal: options.signal,
    });
    const locked: PgLockedSession = new PgLockedSession(
      id,
      this.s,
      held,
      () => this.openLocks.delete(locked),
      () => othersWaitingFor(pool, held.keys),
    );
    this.openLocks.add(locked);
    return locked;
  }

  /** Releases every lock; ends the pool the backend made (a later call makes a new one). Idempotent. */
  async close(): Promise<void> {
    const open = [...this.openLocks];
    this.openLocks.clear();
    await Promise.all(open.map((locked) => locked.release()));
    const pool = this.ownPool;
    this.ownPool = undefined;
    this.prepared = undefined;
    await pool?.end();
  }

  private parseJson(id: string, what: string, text: string): unknown {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new StoreTamperedError(id, `${what} in ${this.schema} is not valid JSON`, { cause: error });
    }
  }
}

/**
 * What failed before any query could run (a connection string that does not parse, a host that does not
 * resolve, a server that is down or refuses the login) as STORAGE_FAILED, the driver's error as the cause.
 */
function cannotConnect(error: unknown): unknown {
  const typed = typedPostgresError(error);
  if (typed !== error || !(error instanceof Error)) return typed;
  const cause = error as NodeJS.ErrnoException;
  cause.syscall ??= "connect to PostgreSQL";
  return new StorageFailedError(cause, typeof cause.code === "string" ? cause.code : "ECONNECT");
}

/** Rows of a new session's log sent in one statement: its memory stays flat however long the log. */
const CREATE_ROWS = 2000;
