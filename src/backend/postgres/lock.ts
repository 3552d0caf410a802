import { createHash } from "node:crypto";
import { hostname } from "node:os";
import pg, { type Pool, type PoolClient } from "pg";
import { LockedError, SessionNotFoundError, StorageFailedError } from "../../core/errors.js";
import type { LockWait } from "../types.js";
import { isConnectionLost } from "./pg-errors.js";
import { advisoryKeys } from "./names.js";
import type { Queryable, QueryResult } from "./queryable.js";

// The session lock (docs/postgres.md, "The lock"): a session-level advisory lock held on one connection for
// the whole hold. The server releases it when that connection ends (the process died, or was paused past its
// lease and the server's idle_session_timeout shut it), and each acquisition bumps the session's lock epoch,
// which every write under the lock checks in the same statement: a holder that lost its connection writes
// nothing more, and one that somehow still reaches the server with an old epoch writes nothing either.

export interface LockSettings {
  /** How long the lock outlives a silent holder (paused, frozen): the server shuts its idle connection then. */
  leaseMs: number;
  waitMs: number;
  onWait?: ((wait: LockWait) => void) | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * A session lock as held: its connection, the incarnation and epoch its writes are fenced by. Every statement on
 * the connection goes through {@link HeldLock.query}, one at a time: writes made at once under the lock (a rewind
 * stores its undo blobs several at a time) and the heartbeat share it, and `pg` refuses a query sent to a client
 * still running one (it warns today; test/backend/postgres-one-query-at-a-time.test.ts).
 */
export class HeldLock implements Queryable {
  private heartbeat: NodeJS.Timeout | undefined;
  private lostBy: Error | undefined;
  private released = false;
  /** The last statement sent or waiting to be: the next one starts when it has settled. */
  private line: Promise<unknown> = Promise.resolve();
  /** Statements sent or waiting: the heartbeat stays quiet while there are any (they keep the lease alive). */
  private pending = 0;
  private readonly onError = (error: Error) => this.lose(error);
  private readonly onEnd = () => this.lose(new Error("the lock's PostgreSQL connection ended"));

  constructor(
    readonly client: PoolClient,
    readonly keys: [number, number],
    readonly incarnation: string,
    readonly epoch: string,
    readonly lastSequence: number,
    leaseMs: number,
  ) {
    client.on("error", this.onError);
    client.on("end", this.onEnd);
    // A query on the connection now and then keeps it from counting as idle; a holder paused past the lease
    // sends none, so the server shuts the connection and with it the lock (idle_session_timeout).
    this.heartbeat = setInterval(
      () => {
        if (this.lostBy === undefined && this.pending === 0)
          this.query("SELECT 1").catch((error: Error) => this.lose(error));
      },
      Math.max(100, Math.floor(leaseMs / 3)),
    );
    this.heartbeat.unref();
  }

  /** Runs a statement on the lock's connection once every statement sent before it has settled. */
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<QueryResult<R>> {
    return this.inLine((client) => client.query<R>(text, values));
  }

  /**
   * {@link HeldLock.query} as a named statement: parsed and planned once per connection, then only bound and run
   * (a lock's writes are the same few statements again and again). Named by a hash of its text, so a name is
   * never reused for another text on a connection the pool hands to someone else later.
   */
  prepared<R = Record<string, unknown>>(text: string, values: unknown[]): Promise<QueryResult<R>> {
    const name = statementName(text);
    return this.inLine(() => namedQuery<R>(this.client, name, text, values));
  }

  /**
   * Runs `fn` with the connection to itself once every statement sent before has settled; statements sent
   * meanwhile wait for it to end (a transaction of several statements: nobody else's write lands inside it).
   */
  inLine<T>(fn: (client: Queryable) => Promise<T>): Promise<T> {
    const client = this.client as unknown as Queryable;
    // Nothing in line (every statement before has settled): sent at once, without a promise and closure of its
    // own waiting for the line, on the path of every append.
    const run = this.pending++ === 0 ? startNow(fn, client) : this.line.then(() => fn(client));
    this.line = run.then(this.settled, this.settled);
    return run;
  }

  private readonly settled = () => this.pending--;

  /** Why the lock is lost (its connection died), or undefined while it holds. */
  get lost(): Error | undefined {
    return this.lostBy;
  }

  /** Records that the lock is lost; the connection is closed, so the server lets the lock go if it has not. */
  lose(error: Error): void {
    if (this.lostBy !== undefined) return;
    this.lostBy = error;
    this.stopHeartbeat();
  }

  /** Unlocks and hands the connection back to the pool; a lost connection is destroyed instead. Idempotent. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.stopHeartbeat();
    let failure: Error | undefined = this.lostBy;
    if (failure === undefined) {
      try {
        await this.query(
          `SELECT pg_advisory_unlock($1, $2), set_config('idle_session_timeout', '0', false),
                  set_config('idle_in_transaction_session_timeout', '0', false)`,
          this.keys,
        );
      } catch (error) {
        failure = error as Error; // the connection is going away: the server lets the lock go with it
      }
    }
    this.client.off("error", this.onError);
    this.client.off("end", this.onEnd);
    // A late error of a destroyed connection must not crash the app. A connection going back to the pool is the
    // pool's to watch: a listener added at each release would pile up on it.
    if (failure !== undefined) this.client.on("error", () => undefined);
    this.client.release(failure ?? undefined);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat !== undefined) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}

/** `fn(client)` as a promise, a throw as its rejection, as when run from a `then`. */
function startNow<T>(fn: (client: Queryable) => Promise<T>, client: Queryable): Promise<T> {
  try {
    return Promise.resolve(fn(client));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * A named statement, sent as a `pg.Query` made from its text with its name set after: given a config object, pg
 * copies it through its property descriptors at every call (8 us of an append's 150-200 us of client CPU, in a
 * profile: docs/postgres.md, "Benchmark"). A client of another copy of pg, or of pg-native, gets the config object.
 */
function namedQuery<R>(client: PoolClient, name: string, text: string, values: unknown[]): Promise<QueryResult<R>> {
  const ours: boolean = (client as unknown) instanceof pg.Client;
  if (!ours) return client.query<R & object>({ name, text, values });
  return new Promise((resolve, reject) => {
    const query = new pg.Query<R & object>(text, values, (error, result) =>
      error ? reject(error) : resolve(result as unknown as QueryResult<R>),
    );
    (query as { name?: string }).name = name;
    client.query(query);
  });
}

/** Names of the statements prepared so far, by their text: a few per schema in use, hashed once each. */
const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    if (statementNames.size >= 1000) statementNames.clear(); // many schemas (tests): hashed again, that is all
    name = `agent_tape_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`;
    statementNames.set(text, name);
  }
  return name;
}

/** The advisory lock keys of a session in a schema. */
export function sessionLockKeys(schema: string, sessionId: string): [number, number] {
  return advisoryKeys("agent-tape session", schema, sessionId);
}

/** Waits for the session's lock, takes it, bumps its epoch. SESSION_NOT_FOUND, LOCKED, or the signal's reason. */
export async function acquireSessionLock(
  pool: Pool,
  s: string,
  schema: string,
  sessionId: string,
  settings: LockSettings,
): Promise<HeldLock> {
  const { signal } = settings;
  signal?.throwIfAborted();
  const keys = sessionLockKeys(schema, sessionId);
  const client = await pool.connect();
  // An error of this connection while nothing listens would crash the process: one listener until it is held.
  const ignore = () => undefined;
  client.on("error", ignore);
  let locked = false;
  try {
    const lease = String(settings.leaseMs);
    const tried = await client.query<{ got: boolean; pid: number }>(
      `SELECT pg_try_advisory_lock($1, $2) AS got, pg_backend_pid() AS pid,
              set_config('idle_session_timeout', $3, false),
              set_config('idle_in_transaction_session_timeout', $3, false)`,
      [...keys, lease],
    );
    const pid = tried.rows[0]!.pid;
    locked = tried.rows[0]!.got;
    if (!locked) {
      await waitForLock(pool, client, s, sessionId, keys, pid, settings);
      locked = true;
    }
    signal?.throwIfAborted();
    // One statement: the epoch bump, the log's end, and a check that this connection is the one that holds the
    // lock (a transaction-mode pooler sends each statement to whichever server connection is free).
    const taken = await client.query<{ incarnation: string; lock_epoch: string; last: string | null; held: boolean }>(
      `WITH c AS (SELECT set_config('synchronous_commit', 'off', true), set_config('lock_timeout', '0', false))
       UPDATE ${s}.sessions x SET lock_epoch = lock_epoch + 1, lock_holder = $2
         FROM c WHERE x.id = $1
       RETURNING x.incarnation, x.lock_epoch,
         (SELECT max(sequence) FROM ${s}.events e WHERE e.incarnation = x.incarnation) AS last,
         pg_backend_pid() = $3 AND EXISTS (SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid()
           AND locktype = 'advisory' AND classid = $4 AND objid = $5 AND objsubid = 2 AND granted) AS held`,
      [sessionId, JSON.stringify({ pid: process.pid, host: hostname() }), pid, ...keys],
    );
    const row = taken.rows[0];
    if (!row) throw new SessionNotFoundError(sessionId); // never made, or deleted while we waited
    if (!row.held) throw poolerInTransactionMode();
    client.off("error", ignore);
    return new HeldLock(client, keys, row.incarnation, row.lock_epoch, Number(row.last ?? 0), settings.leaseMs);
  } catch (error) {
    const lost = isConnectionLost(error);
    if (locked && !lost) await client.query("SELECT pg_advisory_unlock($1, $2)", keys).catch(() => undefined);
    await client
      .query(
        `SELECT set_config('idle_session_timeout', '0', false),
                set_config('idle_in_transaction_session_timeout', '0', false), set_config('lock_timeout', '0', false)`,
      )
      .catch(() => undefined);
    client.release(lost ? (error as Error) : undefined);
    throw error;
  }
}

/** Blocks on the lock (lock_timeout = waitMs), telling `onWait` about once a second; a signal cancels the wait. */
async function waitForLock(
  pool: Pool,
  client: PoolClient,
  s: string,
  sessionId: string,
  keys: [number, number],
  pid: number,
  settings: LockSettings,
): Promise<void> {
  const started = Date.now();
  if (settings.waitMs <= 0) throw new LockedError(sessionId, 0);
  const { signal, onWait } = settings;
  const tell = async () => {
    if (!onWait) return;
    const wait: LockWait = { sessionId, staleInMs: settings.leaseMs, waitedMs: Date.now() - started };
    try {
      const found = await pool.query<{ lock_holder: string | null }>(
        `SELECT lock_holder FROM ${s}.sessions WHERE id = $1`,
        [sessionId],
      );
      const holder = JSON.parse(found.rows[0]?.lock_holder ?? "null") as { pid?: number; host?: string } | null;
      if (typeof holder?.pid === "number") {
        wait.holderPid = holder.pid;
        if (holder.host === hostname()) wait.holderAlive = processRuns(holder.pid);
      }
    } catch {
      // What the wait is told is a courtesy: the wait goes on without it.
    }
    try {
      onWait(wait);
    } catch {
      // onWait must not throw; if it does, the wait is not the place to fail.
    }
  };
  void tell();
  const timer = setInterval(() => void tell(), 1000);
  timer.unref();
  const cancel = () => {
    void pool.query("SELECT pg_cancel_backend($1)", [pid]).catch(() => undefined);
  };
  signal?.addEventListener("abort", cancel, { once: true });
  try {
    await client.query("SELECT set_config('lock_timeout', $1, false)", [String(Math.ceil(settings.waitMs))]);
    signal?.throwIfAborted();
    await client.query("SELECT pg_advisory_lock($1, $2)", keys);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "55P03") throw new LockedError(sessionId, Date.now() - started, { cause: error });
    if (signal?.aborted) throw signal.reason;
    throw error;
  } finally {
    clearInterval(timer);
    signal?.removeEventListener("abort", cancel);
  }
}

const OTHERS_WAITING = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
    AND classid = $1 AND objid = $2 AND objsubid = 2
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS waiting`;

/**
 * Whether someone else waits for the lock with these keys, as pg_locks shows it (any process, any machine). A named
 * statement: a busy holder asks once per lockMaxHoldMs while its own writes are in flight, and planned anew each
 * time (the view, the subquery) it cost the server more to plan than to run (docs/postgres.md, "Benchmark").
 */
export async function othersWaitingFor(pool: Pool, keys: [number, number]): Promise<boolean> {
  const found = await pool.query<{ waiting: boolean }>({
    name: statementName(OTHERS_WAITING),
    text: OTHERS_WAITING,
    values: keys,
  });
  return found.rows[0]?.waiting === true;
}

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function poolerInTransactionMode(): StorageFailedError {
  const error = new Error(
    "this connection does not keep what its statements did (a pooler in transaction mode, such as PgBouncer's " +
      "pool_mode=transaction, sends each statement to whichever server connection is free), so it cannot hold " +
      "a session lock: connect to PostgreSQL directly, or through a session-mode pool",
  ) as NodeJS.ErrnoException;
  error.syscall = "hold a session lock on one PostgreSQL connection";
  return new StorageFailedError(error, "EPOOLER");
}
