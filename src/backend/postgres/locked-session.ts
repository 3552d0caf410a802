import { lineBatch, parseEventLine, serializeEvent } from "../../core/envelope.js";
import { InvalidArgumentError, LockCompromisedError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import { isBlobHash, isRecordName } from "../names.js";
import { appendBatch } from "../append-batch.js";
import type { AppendOptions, ArchivedLog, LockedSession, RewindFinish } from "../types.js";
import { encodeBlob } from "../fs/blob-codec.js";
import {
  ARCHIVE_PART_BYTES,
  archiveLogStatement,
  archivedLogOf,
  archivedLogParts,
  deleteArchivedLog,
  type ArchiveCopied,
} from "./archive.js";
import type { HeldLock } from "./lock.js";
import { finishRewindStatement, keptLineColumns, keptLineStatement, type KeptLine } from "./rewind-finish.js";
import { isConnectionLost } from "./pg-errors.js";
import type { Queryable } from "./queryable.js";

/**
 * A PostgreSQL session while its lock is held. Every write goes through the lock's connection and checks the
 * session's lock epoch in the same statement (the fence, `f` below): a statement that finds another epoch, or a
 * connection that died, marks the lock lost and throws LOCK_COMPROMISED, having written nothing.
 */
export class PgLockedSession implements LockedSession {
  private released = false;
  private compromisedBy: Error | undefined;
  private last: number;

  constructor(
    readonly sessionId: string,
    private readonly s: string,
    private readonly lock: HeldLock,
    private readonly onRelease: () => void,
    private readonly waiting: () => Promise<boolean>,
  ) {
    this.last = lock.lastSequence;
  }

  get lastSequence(): number {
    return this.last;
  }

  get held(): boolean {
    return !this.released && this.compromisedBy === undefined && this.lock.lost === undefined;
  }

  othersWaiting(): Promise<boolean> {
    return this.waiting();
  }

  assertHeld(): void {
    if (this.compromisedBy === undefined && !this.released && this.lock.lost !== undefined)
      this.compromisedBy = this.lock.lost;
    if (this.compromisedBy) throw new LockCompromisedError(this.sessionId, { cause: this.compromisedBy });
    if (this.released) throw new InvalidArgumentError(`The lock on session "${this.sessionId}" was already released.`);
  }

  /**
   * The fence every write starts with: the session's row at this lock's epoch. No row lock is needed to make the
   * check and the write one: a take-over bumps the epoch only once it holds the advisory lock, which this
   * connection holds until it ends, and a statement of a connection that ended never commits.
   */
  private get fence(): string {
    return `f AS (SELECT 1 FROM ${this.s}.sessions WHERE incarnation = $1 AND lock_epoch = $2)`;
  }

  /** Runs a fenced statement; `fenced` says from its result whether the fence held. */
  private write<R>(
    text: string,
    values: unknown[],
    fenced: (result: { rows: R[]; rowCount: number | null }) => boolean,
    db: Queryable = this.lock,
  ): Promise<R[]> {
    return this.fencedWrite(text, [this.lock.incarnation, this.lock.epoch, ...values], fenced, db);
  }

  /**
   * {@link write} given all its values, the fence's two first; `fenced` a function of the result, or the row count
   * that says the fence held.
   */
  private async fencedWrite<R>(
    text: string,
    all: unknown[],
    fenced: ((result: { rows: R[]; rowCount: number | null }) => boolean) | number,
    db: Queryable = this.lock,
  ): Promise<R[]> {
    this.assertHeld();
    let result: { rows: R[]; rowCount: number | null };
    try {
      result = await (db === this.lock ? this.lock.prepared<R & object>(text, all) : db.query<R & object>(text, all));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      // A connection that died took the lock with it; a row already there under our key means another writer.
      if (isConnectionLost(error) || this.lock.lost !== undefined || code === "23505") {
        this.lose(error as Error);
        throw new LockCompromisedError(this.sessionId, { cause: error });
      }
      throw error;
    }
    if (typeof fenced === "number" ? result.rowCount !== fenced : !fenced(result)) {
      const why = new Error(`session "${this.sessionId}" was locked again since (its lock epoch moved on) or deleted`);
      this.lose(why);
      throw new LockCompromisedError(this.sessionId, { cause: why });
    }
    return result.rows;
  }

  private lose(error: Error): void {
    this.compromisedBy ??= error;
    this.lock.lose(error);
  }

  /** The append statements by [single][relaxed], made once: the same text object each time is found at once. */
  private readonly appendStatements: string[][] = [[], []];

  /**
   * The statement that appends one event (`single`) or several, fenced. One statement: all or nothing by
   * construction. `relaxed` (no sync): this transaction alone commits without waiting for its WAL to reach the
   * disk (synchronous_commit off): a server crash may lose it, never tear it. A single event goes as plain
   * values: no arrays to escape on the way and to take apart at the server. Made once per session and kind: the
   * text names the prepared statement (lock.ts), and a text made anew is hashed whole at every lookup, on the
   * path of every append (docs/postgres.md, "Benchmark": a store append against a bare insert).
   */
  private appendStatement(single: boolean, relaxed: boolean): string {
    const made = this.appendStatements[single ? 1 : 0]!;
    const key = relaxed ? 1 : 0;
    const cached = made[key];
    if (cached !== undefined) return cached;
    const withRelaxed = relaxed ? `, c AS (SELECT set_config('synchronous_commit', 'off', true))` : "";
    const from = relaxed ? "f, c" : "f";
    const rows = single
      ? `SELECT $1, $3::bigint, $4::text FROM ${from}`
      : `SELECT $1, u.sequence, u.line FROM ${from}, unnest($3::bigint[], $4::text[]) AS u(sequence, line)`;
    const text = `WITH ${this.fence}${withRelaxed} INSERT INTO ${this.s}.events (incarnation, sequence, line) ${rows}`;
    made[key] = text;
    return text;
  }

  async append(events: readonly StoredEvent[], options: AppendOptions = {}): Promise<void> {
    this.assertHeld();
    if (events.length === 0) return;
    const batch = appendBatch(this.sessionId, this.last, events, options);
    const single = events.length === 1;
    const { incarnation, epoch } = this.lock;
    // The values in one array literal per append: a single event's line made on its own, no arrays around it.
    const values = single
      ? [incarnation, epoch, events[0]!.sequence, serializeEvent(events[0]!, batch)]
      : [
          incarnation,
          epoch,
          events.map((event) => event.sequence),
          events.map((event) => serializeEvent(event, batch)),
        ];
    await this.fencedWrite(this.appendStatement(single, options.sync === false), values, events.length);
    this.last = events[events.length - 1]!.sequence;
  }

  async truncateAfter(sequence: number): Promise<void> {
    this.assertHeld();
    if (sequence >= this.last) return;
    const s = this.s;
    const kept = await this.lock.query<KeptLine>(keptLineStatement(s), [
      this.lock.incarnation,
      Math.max(0, Math.floor(sequence)),
    ]);
    const { lastKept, closingLine } = closingLineOf(kept.rows[0]);
    // One statement, so one transaction: the delete, the cut readers check, and the closing line.
    await this.write<{ fenced: string }>(
      `WITH ${this.fence},
         d AS (DELETE FROM ${s}.events WHERE incarnation = $1 AND sequence > $3 AND EXISTS (SELECT 1 FROM f)),
         c AS (INSERT INTO ${s}.cuts (incarnation, after_sequence) SELECT $1, $3 FROM f),
         u AS (UPDATE ${s}.events SET line = $4 WHERE incarnation = $1 AND sequence = $3 AND $4::text IS NOT NULL
                 AND EXISTS (SELECT 1 FROM f))
       SELECT count(*) AS fenced FROM f`,
      [lastKept, closingLine],
      (result) => result.rows[0]?.fenced === "1",
    );
    this.last = lastKept;
  }

  /**
   * Two round trips: the cut part copied (committed without waiting for the disk) with the line the cut keeps
   * last read in the same statement, then one fenced statement for all the rest, one durable commit
   * (rewind-finish.ts). A connection cut before that commit leaves none of the rest; the caller's intent says
   * how to do it again.
   */
  async finishRewind(steps: RewindFinish): Promise<void> {
    this.assertHeld();
    const cutAfter = Math.max(0, Math.floor(steps.truncateAfter));
    const cut = cutAfter < this.last;
    let kept: KeptLine | undefined;
    let archived: ArchivedLog | undefined;
    if (steps.archive) {
      const { name, after } = steps.archive;
      assertRecordName(name);
      const [copied] = await this.write<ArchiveCopied & KeptLine>(
        archiveLogStatement(this.s, this.fence, keptLineColumns(this.s)),
        [name, Math.max(0, Math.floor(after)), ARCHIVE_PART_BYTES, cutAfter],
        (result) => result.rows[0]?.fenced === "1",
      );
      kept = copied!;
      const incarnation = this.lock.incarnation;
      archived = await archivedLogOf(copied!, () => archivedLogParts(this.lock, this.s, { incarnation }, name));
    } else if (cut)
      kept = (await this.lock.query<KeptLine>(keptLineStatement(this.s), [this.lock.incarnation, cutAfter])).rows[0];
    const { lastKept, closingLine } = cut ? closingLineOf(kept) : { lastKept: this.last, closingLine: null };
    const { append, writeRecords } = steps.finalWrites(archived);
    const batch = appendBatch(this.sessionId, this.last, append, {});
    const written = writeRecords.map((record) => record.name);
    for (const name of [...written, ...steps.deleteRecords]) assertRecordName(name);
    if (steps.deleteRecords.some((name) => written.includes(name)))
      throw new InvalidArgumentError("finishRewind cannot both write and delete the same record.");
    for (const hash of steps.deleteBlobs) assertBlobHash(hash);
    const values = writeRecords.map((record) => {
      const text = JSON.stringify(record.value);
      if (text === undefined) throw new InvalidArgumentError(`Record "${record.name}" has no JSON form.`);
      return text;
    });
    await this.write<{ fenced: string; appended: string }>(
      finishRewindStatement(this.s, this.fence),
      [
        lastKept,
        closingLine,
        cut,
        [...steps.deleteBlobs],
        [...steps.deleteRecords],
        append.map((event) => event.sequence),
        append.map((event) => serializeEvent(event, batch)),
        written,
        values,
      ],
      (result) => result.rows[0]?.fenced === "1" && Number(result.rows[0].appended) === append.length,
    );
    this.last = append.length > 0 ? append[append.length - 1]!.sequence : lastKept;
  }

  /**
   * Copies the lines after `sequence` beside record `name` inside the database, in one fenced statement (the
   * bytes the fs backend would copy, so the sha256 is the same); replaces any copy there. Whole or absent.
   */
  async archiveLogAfter(sequence: number, name: string): Promise<ArchivedLog> {
    this.assertHeld();
    assertRecordName(name);
    const [copied] = await this.write<ArchiveCopied>(
      archiveLogStatement(this.s, this.fence),
      [name, Math.max(0, Math.floor(sequence)), ARCHIVE_PART_BYTES],
      (result) => result.rows[0]?.fenced === "1",
    );
    const incarnation = this.lock.incarnation;
    return archivedLogOf(copied!, () => archivedLogParts(this.lock, this.s, { incarnation }, name));
  }

  async writeBlob(hash: string, bytes: Uint8Array, options: { durable?: boolean } = {}): Promise<boolean> {
    this.assertHeld();
    assertBlobHash(hash);
    const stored = Buffer.from(await encodeBlob(bytes)); // a copy either way: the caller may reuse its buffer
    // Not durable: committed without waiting for the WAL flush. The WAL is one ordered log, so the next
    // durable commit on this connection (the event that references the blob) makes the blob durable too.
    const relaxed = options.durable === false ? `, c AS (SELECT set_config('synchronous_commit', 'off', true))` : "";
    const from = options.durable === false ? "f, c" : "f";
    const rows = await this.write<{ fenced: string; written: string }>(
      `WITH ${this.fence}${relaxed},
         i AS (INSERT INTO ${this.s}.blobs (incarnation, hash, stored) SELECT $1, $3, $4 FROM ${from}
                 ON CONFLICT (incarnation, hash) DO NOTHING RETURNING 1)
       SELECT (SELECT count(*) FROM f) AS fenced, (SELECT count(*) FROM i) AS written`,
      [hash, stored],
      (result) => result.rows[0]?.fenced === "1",
    );
    return rows[0]?.written === "1";
  }

  /**
   * One fenced `INSERT … SELECT FROM unnest(hashes, bytes)` per {@link BLOBS_PER_STATEMENT_BYTES} of encoded
   * blobs: a capture's snapshot is one round trip. More than one statement run in one transaction, so the batch
   * is whole or absent.
   */
  async writeBlobs(
    blobs: Iterable<readonly [hash: string, bytes: Uint8Array]>,
    options: { durable?: boolean } = {},
  ): Promise<string[]> {
    this.assertHeld();
    const groups: { hashes: string[]; stored: Buffer[] }[] = [];
    let size = Infinity;
    for (const [hash, bytes] of blobs) {
      assertBlobHash(hash);
      const stored = Buffer.from(await encodeBlob(bytes));
      if (size + stored.length > BLOBS_PER_STATEMENT_BYTES) {
        groups.push({ hashes: [], stored: [] });
        size = 0;
      }
      size += stored.length;
      groups.at(-1)!.hashes.push(hash);
      groups.at(-1)!.stored.push(stored);
    }
    if (groups.length === 0) return [];
    if (groups.length === 1) return this.insertBlobs(groups[0]!, options);
    // The connection to this transaction alone: a write made meanwhile under the lock waits for its end.
    return this.lock.inLine(async (db) => {
      await db.query("BEGIN");
      try {
        const written: string[] = [];
        for (const group of groups) written.push(...(await this.insertBlobs(group, options, db)));
        await db.query("COMMIT");
        return written;
      } catch (error) {
        await db.query("ROLLBACK").catch(() => undefined);
        throw error;
      }
    });
  }

  /** A scan's blobs: {@link writeBlobs} without waiting for the commit's flush (syncBlobs: nothing to do). */
  async writeScanBlobs(blobs: Iterable<readonly [hash: string, bytes: Uint8Array]>): Promise<string[]> {
    return this.writeBlobs(blobs, { durable: false });
  }

  private async insertBlobs(
    group: { hashes: string[]; stored: Buffer[] },
    options: { durable?: boolean },
    db: Queryable = this.lock,
  ): Promise<string[]> {
    const relaxed = options.durable === false ? `, c AS (SELECT set_config('synchronous_commit', 'off', true))` : "";
    const from = options.durable === false ? "f, c," : "f,";
    // The fence's row comes back even when every blob was already there: no row at all means it did not hold.
    const rows = await this.write<{ hash: string | null }>(
      `WITH ${this.fence}${relaxed},
         i AS (INSERT INTO ${this.s}.blobs (incarnation, hash, stored)
                 SELECT $1, u.hash, u.stored FROM ${from} unnest($3::text[], $4::bytea[]) AS u(hash, stored)
                 ON CONFLICT (incarnation, hash) DO NOTHING RETURNING hash)
       SELECT i.hash FROM f LEFT JOIN i ON true`,
      [group.hashes, group.stored],
      (result) => result.rows.length > 0,
      db,
    );
    return rows.flatMap((row) => (row.hash === null ? [] : [row.hash]));
  }

  /** Nothing to do: a later durable commit on this connection flushes the WAL up to it, blobs included. */
  async syncBlobs(_hashes: Iterable<string>): Promise<void> {
    this.assertHeld();
  }

  async hasBlob(hash: string): Promise<boolean> {
    this.assertHeld();
    if (!isBlobHash(hash)) return false;
    const found = await this.lock.query(`SELECT 1 FROM ${this.s}.blobs WHERE incarnation = $1 AND hash = $2`, [
      this.lock.incarnation,
      hash,
    ]);
    return found.rows.length > 0;
  }

  async deleteBlob(hash: string): Promise<void> {
    this.assertHeld();
    if (!isBlobHash(hash)) return; // no blob has that name
    await this.write<{ fenced: string }>(
      `WITH ${this.fence},
         d AS (DELETE FROM ${this.s}.blobs WHERE incarnation = $1 AND hash = $3 AND EXISTS (SELECT 1 FROM f))
       SELECT count(*) AS fenced FROM f`,
      [hash],
      (result) => result.rows[0]?.fenced === "1",
    );
  }

  /** {@link deleteBlob} for many in one fenced statement: a prune of 2,000 blobs is one round trip, not 2,000. */
  async deleteBlobs(hashes: readonly string[]): Promise<void> {
    this.assertHeld();
    const named = [...new Set(hashes.filter(isBlobHash))];
    if (named.length === 0) return;
    await this.write<{ fenced: string }>(
      `WITH ${this.fence},
         d AS (DELETE FROM ${this.s}.blobs
                WHERE incarnation = $1 AND hash = ANY($3::text[]) AND EXISTS (SELECT 1 FROM f))
       SELECT count(*) AS fenced FROM f`,
      [named],
      (result) => result.rows[0]?.fenced === "1",
    );
  }

  async writeRecord(name: string, value: unknown, options: { durable?: boolean } = {}): Promise<void> {
    this.assertHeld();
    assertRecordName(name);
    const text = JSON.stringify(value);
    if (text === undefined) throw new InvalidArgumentError(`Record "${name}" has no JSON form.`);
    const relaxed = options.durable === false ? `, c AS (SELECT set_config('synchronous_commit', 'off', true))` : "";
    const from = options.durable === false ? "f, c" : "f";
    await this.write(
      `WITH ${this.fence}${relaxed}
       INSERT INTO ${this.s}.records (incarnation, name, value) SELECT $1, $3, $4 FROM ${from}
       ON CONFLICT (incarnation, name) DO UPDATE SET value = EXCLUDED.value`,
      [name, text],
      (result) => result.rowCount === 1,
    );
  }

  async deleteRecord(name: string, options: { archivedLog?: boolean } = {}): Promise<void> {
    this.assertHeld();
    assertRecordName(name);
    await this.write<{ fenced: string }>(
      `WITH ${this.fence},
         d AS (DELETE FROM ${this.s}.records WHERE incarnation = $1 AND name = $3 AND EXISTS (SELECT 1 FROM f))
         ${options.archivedLog ? `, a AS (${deleteArchivedLog(this.s)})` : ""}
       SELECT count(*) AS fenced FROM f`,
      [name],
      (result) => result.rows[0]?.fenced === "1",
    );
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.onRelease();
    await this.lock.release();
  }
}

/**
 * The last line a cut keeps, and that line written again when it is inside a batch that went on past the cut:
 * marked as that batch's end, as the fs backend does, so the log's bytes stay the same across backends.
 */
function closingLineOf(kept: KeptLine | undefined): { lastKept: number; closingLine: string | null } {
  if (!kept || kept.kept_sequence === null || kept.kept_line === null) return { lastKept: 0, closingLine: null };
  const lastKept = Number(kept.kept_sequence);
  const event = parseEventLine(kept.kept_line);
  const batch = typeof event === "string" ? undefined : lineBatch(event);
  if (!batch || batch.last <= lastKept) return { lastKept, closingLine: null };
  const closed = batch.first < lastKept ? { first: batch.first, last: lastKept } : undefined;
  return { lastKept, closingLine: serializeEvent(event as StoredEvent, closed) };
}

/** Encoded blob bytes sent in one statement: a capture's snapshot is one round trip, its memory bounded. */
const BLOBS_PER_STATEMENT_BYTES = 32 * 1024 * 1024;

function assertBlobHash(hash: string): void {
  if (!isBlobHash(hash))
    throw new InvalidArgumentError(`"${hash}" is not a blob name: a blob is named by its lowercase hex sha256.`);
}

function assertRecordName(name: string): void {
  if (!isRecordName(name)) throw new InvalidArgumentError(`Invalid record name "${name}".`);
}
