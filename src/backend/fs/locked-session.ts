import type { FileHandle } from "node:fs/promises";
import { open, rename, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { lineBatch, serializeEvent, parseEventLine } from "../../core/envelope.js";
import { InvalidArgumentError, LockCompromisedError, LogCorruptError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import { appendBatch } from "../append-batch.js";
import type { AppendOptions, ArchivedLog, LockedSession } from "../types.js";
import { copyLogRange } from "./archive-log.js";
import { fsyncDir, tempPathFor, writeFileAtomic } from "../../core/atomic-file.js";
import { compactPackIfDead } from "./blob-pack.js";
import {
  blobExists,
  deleteBlobFile,
  deleteBlobFiles,
  discardIncomingBlobs,
  writeBlobFile,
  writeBlobFiles,
} from "./blobs.js";
import { syncBlobFiles, syncBlobFilesWith } from "./blob-sync.js";
import { isBlobHash, isRecordName } from "../names.js";
import type { SessionLayout } from "./layout.js";
import { checkStoreFolderSync, openStoreFileStat, READ_APPEND } from "./store-files.js";
import { findLeftovers } from "./leftovers.js";
import { keptEndFor, keptEndForwards, type KeptEnd } from "./seek.js";
import { cutLog } from "./log-cuts.js";
import { unfinishedBatchStart } from "./unfinished-batch.js";
import { lineNumberAt, readTail } from "./lines.js";
import type { FileLock } from "./lock.js";
import { constants, mkdirSync, statSync, unlinkSync, type Stats } from "node:fs";

/**
 * The filesystem session while its lock is held. Because nobody else can write, the log's end
 * (size and last sequence) is read once at lock time and then kept in memory: an append is one
 * `write` (+ `fdatasync`) on a kept-open descriptor, with no re-read.
 *
 * Every write is fenced (docs/ARCHITECTURE.md, "Lock lease"): none starts once the lease has
 * lapsed, and an append is acknowledged only after a `stat` of the log path shows the same inode,
 * grown by exactly our bytes — a process that took the lock over as stale has moved the log to
 * a new inode, so a write by a stalled holder lands in the old one and is reported, not counted.
 */
export class FsLockedSession implements LockedSession {
  private compromisedBy: Error | undefined;
  private released = false;
  // Leftovers swept as the lock was taken, not yet named to anyone (sweepLeftovers).
  private readonly sweptWhenTaken: string[] = [];
  // Opened O_DSYNC on the first durable append: then one write() is both the write and the
  // fdatasync, a single trip through libuv's thread pool instead of two.
  private syncFh: FileHandle | undefined;
  /** The last answer of {@link keptEnd}, for the log as it was then (its handle and length). */
  private lastSeek: { fh: FileHandle; sequence: number; size: number; found: KeptEnd } | undefined;

  private constructor(
    readonly sessionId: string,
    private readonly layout: SessionLayout,
    private fh: FileHandle,
    private inode: number,
    private size: number,
    private last: number,
    private readonly lock: FileLock,
    private readonly onRelease: () => void,
    private readonly waiting: () => Promise<boolean>,
  ) {}

  /**
   * Opens the log under a freshly taken lock, cutting off a torn last line (a crash mid-append)
   * so a new line is never glued to a fragment. A corrupt last complete line is refused: writing
   * after it would bury the damage.
   */
  static async open(
    sessionId: string,
    layout: SessionLayout,
    lock: FileLock,
    onRelease: () => void,
    waiting: () => Promise<boolean>,
  ): Promise<FsLockedSession> {
    const file = layout.log(sessionId);
    checkStoreFolderSync(sessionId, layout.dir(sessionId));
    const { handle: fh, info } = await openStoreFileStat(sessionId, file, READ_APPEND);
    try {
      let tail = await readTail(fh, info.size);
      // Cut what a writer killed mid-write left: a torn last line, and the lines of a batch (an appendMany)
      // that never reached its last one, so a batch is in the log whole or not at all.
      const cut = await unfinishedBatchStart(file, fh, tail);
      if (cut !== undefined || tail.completeEnd < tail.size) {
        // Recorded as a rewind's cut is: a reader paused past it must not glue what it read to what comes next.
        await cutLog(sessionId, layout.cuts(sessionId), fh, cut ?? tail.completeEnd);
        if (cut !== undefined) tail = await readTail(fh, cut);
      }
      let last = 0;
      if (tail.last) {
        const parsed = parseEventLine(tail.last.text, undefined, "as-written");
        if (typeof parsed === "string") {
          throw new LogCorruptError(file, await lineNumberAt(file, tail.last.start), parsed);
        }
        // The line before must come before it: a last line that goes backwards or repeats (a damaged
        // or doubled write) would have the next append reuse numbers already in the log.
        const before = tail.last.start > 0 ? (await readTail(fh, tail.last.start)).last : undefined;
        const previous = before ? parseEventLine(before.text, undefined, "as-written") : undefined;
        if (previous !== undefined && typeof previous !== "string" && previous.sequence >= parsed.sequence) {
          const reason = `sequence ${parsed.sequence} does not follow ${previous.sequence}`;
          throw new LogCorruptError(file, await lineNumberAt(file, tail.last.start), reason);
        }
        last = parsed.sequence;
      }
      return new FsLockedSession(sessionId, layout, fh, info.ino, tail.completeEnd, last, lock, onRelease, waiting);
    } catch (error) {
      await fh.close();
      throw error;
    }
  }

  get lastSequence(): number {
    return this.last;
  }

  get held(): boolean {
    return !this.released && this.compromisedBy === undefined && !this.lock.lapsed();
  }

  /** Another process waits for this lock (a fresh marker in `events.jsonl.waiting/`). */
  othersWaiting(): Promise<boolean> {
    return this.waiting();
  }

  /** Called by the lock's timer when the lock was lost; the next operation throws. */
  markCompromised(error: Error): void {
    this.compromisedBy ??= error;
  }

  assertHeld(): void {
    if (!this.released && this.compromisedBy === undefined && this.lock.lapsed())
      this.markCompromised(new Error(`the lock's lease went unrefreshed for ${this.lock.sinceRefresh()} ms`));
    if (this.compromisedBy) throw new LockCompromisedError(this.sessionId, { cause: this.compromisedBy });
    if (this.released) throw new InvalidArgumentError(`The lock on session "${this.sessionId}" was already released.`);
  }

  async append(events: readonly StoredEvent[], options: AppendOptions = {}): Promise<void> {
    this.assertHeld();
    if (events.length === 0) return;
    const batch = appendBatch(this.sessionId, this.last, events, options);
    let text = "";
    for (const event of events) text += serializeEvent(event, batch) + "\n";
    const bytes = Buffer.from(text, "utf8");
    try {
      const fh = (options.sync ?? true) ? await this.syncHandle() : this.fh;
      let written = 0;
      while (written < bytes.length) {
        const { bytesWritten } = await fh.write(bytes, written, bytes.length - written);
        written += bytesWritten;
      }
    } catch (error) {
      // All or nothing: take back a partial write so no fragment is left for the next append.
      await this.takeBack(this.size);
      throw error;
    }
    await this.assertLogIsOurs(this.size + bytes.length);
    this.size += bytes.length;
    this.last = events[events.length - 1]!.sequence;
  }

  /**
   * Appends a stream of events as one batch, a chunk of lines per write, so its memory follows a chunk, not
   * the batch (an undo putting back 999k events). A crash mid-way leaves an unfinished batch, which the
   * next lock holder cuts (see `open`); a failure here takes back what was written: all or nothing.
   */
  async appendStream(
    events: AsyncIterable<StoredEvent>,
    batch: { first: number; last: number },
    options: AppendOptions = {},
  ): Promise<void> {
    this.assertHeld();
    const start = this.size;
    let previous = this.last;
    let written = 0;
    let pending: string[] = [];
    let pendingLength = 0;
    const flush = async () => {
      const bytes = Buffer.from(pending.join(""), "utf8");
      pending = [];
      pendingLength = 0;
      for (let done = 0; done < bytes.length; )
        done += (await this.fh.write(bytes, done, bytes.length - done)).bytesWritten;
      written += bytes.length;
    };
    try {
      for await (const event of events) {
        const expected = previous === this.last ? batch.first : previous + 1;
        if (event.sequence !== expected || event.sequence > batch.last)
          throw new InvalidArgumentError(
            `Event sequence ${event.sequence} is not ${expected} of batch ${batch.first}-${batch.last} ` +
              `in session "${this.sessionId}".`,
          );
        previous = event.sequence;
        const line = serializeEvent(event, batch) + "\n";
        pending.push(line);
        pendingLength += line.length;
        if (pendingLength >= 64 * 1024) await flush();
      }
      if (previous !== batch.last)
        throw new InvalidArgumentError(`A batch ${batch.first}-${batch.last} ended at ${previous}.`);
      await flush();
      if (options.sync ?? true) await this.fh.datasync();
    } catch (error) {
      await this.takeBack(start);
      throw error;
    }
    await this.assertLogIsOurs(start + written);
    this.size = start + written;
    this.last = batch.last;
  }

  async archiveLogAfter(sequence: number, name: string): Promise<ArchivedLog> {
    this.assertHeld();
    assertRecordName(name);
    const file = this.layout.log(this.sessionId);
    const from = sequence >= this.last ? this.size : (await this.keptEnd(file, sequence)).offset;
    // At once: the folder's check and its making, where each round trip through the pool cost more.
    if (!checkStoreFolderSync(this.sessionId, this.layout.records(this.sessionId)))
      mkdirSync(this.layout.records(this.sessionId), { recursive: true });
    return copyLogRange(this.fh, from, this.size, this.layout.archivedLog(this.sessionId, name));
  }

  /**
   * Where the events up to `sequence` end, found backwards from the end (seek.ts). A rewind asks twice for the
   * same point, to copy the part it cuts and then to cut it: the second ask reuses the first's answer while the
   * log has the same length, instead of parsing every cut line again.
   */
  private async keptEnd(file: string, sequence: number): Promise<KeptEnd> {
    const seen = this.lastSeek;
    if (seen?.fh === this.fh && seen.sequence === sequence && seen.size === this.size) return seen.found;
    const found = (await keptEndFor(this.fh, this.size, sequence)) ?? (await keptEndForwards(file, sequence));
    this.lastSeek = { fh: this.fh, sequence, size: this.size, found };
    return found;
  }

  async truncateAfter(sequence: number): Promise<void> {
    this.assertHeld();
    if (sequence >= this.last) return;
    const file = this.layout.log(this.sessionId);
    // Found backwards from the end, so the cost follows the cut, not the log (see seek.ts); a line on
    // the way that does not parse sends us the long way round, which names it.
    const found = await this.keptEnd(file, sequence);
    this.lastSeek = undefined;
    let keepBytes = found.offset;
    const lastKept = found.sequence;
    // A cut inside a batch keeps its first part: that part's last line is written again marked as the
    // batch's end, or the next lock holder would take the kept part for an unfinished batch and cut it.
    let closingLine: Buffer | undefined;
    const lastLine = keepBytes > 0 ? (await readTail(this.fh, keepBytes)).last : undefined;
    const lastEvent = lastLine && parseEventLine(lastLine.text);
    const batch = lastEvent && typeof lastEvent !== "string" ? lineBatch(lastEvent) : undefined;
    if (lastLine && batch && batch.last > lastKept) {
      const closed = batch.first < lastKept ? { first: batch.first, last: lastKept } : undefined;
      closingLine = Buffer.from(serializeEvent(lastEvent as StoredEvent, closed) + "\n", "utf8");
      keepBytes = lastLine.start;
    }
    if (!closingLine) {
      await this.cutInPlace(keepBytes, lastKept);
      return;
    }
    // A cut inside a batch rewrites a line, which no single call can do across a crash: copy the kept
    // prefix to a temp file and rename it over the log, so a crash leaves the old log or the new one.
    // Readers holding the old file keep a consistent view. A failure on the way (ENOSPC, EFBIG, a lost
    // lock) removes the temp: nothing is left beside the log. This copy follows the log's length.
    const temp = tempPathFor(file);
    try {
      const out = await open(temp, "wx", 0o644);
      try {
        const buf = Buffer.allocUnsafe(64 * 1024);
        for (let pos = 0; pos < keepBytes; ) {
          const { bytesRead } = await this.fh.read(buf, 0, Math.min(buf.length, keepBytes - pos), pos);
          if (bytesRead === 0) break;
          await out.write(buf, 0, bytesRead);
          pos += bytesRead;
        }
        if (closingLine) {
          await out.write(closingLine);
          keepBytes += closingLine.length;
        }
        await out.sync();
      } finally {
        await out.close();
      }
      // The last moment to find the lock lost before replacing the log.
      this.assertHeld();
      await this.assertLogIsOurs(this.size);
      await rename(temp, file);
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
    await fsyncDir(dirname(file));
    await this.closeHandles();
    const reopened = await openStoreFileStat(this.sessionId, file, READ_APPEND);
    this.fh = reopened.handle;
    this.inode = reopened.info.ino;
    this.size = keepBytes;
    this.last = lastKept;
  }

  /**
   * Cuts the log at a line's end with one ftruncate, so the cost follows nothing, neither the cut nor
   * the log; a crash leaves the old size or the new one, and the rewind intent runs it again. The cut
   * is recorded beside the log before anything is appended after it, so a reader reading meanwhile
   * never glues bytes from before the cut to bytes from after it (log-cuts.ts). Recorded before the
   * ftruncate too, so a crash between the two still leaves a record for a reader that read on meanwhile.
   */
  private async cutInPlace(keepBytes: number, lastKept: number): Promise<void> {
    // The last moment to find the lock lost before changing the log.
    this.assertHeld();
    await this.assertLogIsOurs(this.size);
    await cutLog(this.sessionId, this.layout.cuts(this.sessionId), this.fh, keepBytes);
    this.size = keepBytes;
    this.last = lastKept;
  }

  /**
   * Takes back what a failed append wrote past `size`: a cut in place like a rewind's, recorded for readers who
   * read the lines meanwhile (a batch's, held back by them) before the next append reuses those offsets.
   * Best-effort: the failure being reported is the append's.
   */
  private async takeBack(size: number): Promise<void> {
    await cutLog(this.sessionId, this.layout.cuts(this.sessionId), this.fh, size).catch(() =>
      this.fh.truncate(size).catch(() => undefined),
    );
  }

  /** The O_DSYNC descriptor, opened on first use: by path, so checked to be the log this lock opened. */
  private async syncHandle(): Promise<FileHandle> {
    if (this.syncFh) return this.syncFh;
    const { handle: fh, info } = await openStoreFileStat(this.sessionId, this.layout.log(this.sessionId), DSYNC_APPEND);
    if (info.ino !== this.inode) {
      await fh.close();
      this.lostLog("the log was replaced by another process");
    }
    this.syncFh = fh;
    return fh;
  }

  /**
   * The fence after a write: the log path still names our inode, and it ends where our writes
   * left it. Otherwise another process took the lock over (and moved the log) or wrote to it, so
   * what we just wrote must not be acknowledged.
   */
  private async assertLogIsOurs(expectedSize: number): Promise<void> {
    // A synchronous stat: a cached metadata lookup of a few microseconds, where a thread-pool round trip
    // cost ~10% of a durable append's throughput (docs/ARCHITECTURE.md, "Lock lease").
    let info: Stats | Error;
    try {
      info = statSync(this.layout.log(this.sessionId));
    } catch (error) {
      info = error as Error;
    }
    if (info instanceof Error) this.lostLog(`the log could not be checked (${info.message})`, info);
    else if (info.ino !== this.inode) this.lostLog("the log was moved to a new file by a process that took the lock");
    else if (info.size !== expectedSize)
      this.lostLog(`the log is ${info.size} bytes where this writer left it at ${expectedSize}`);
  }

  private lostLog(reason: string, cause?: Error): never {
    this.markCompromised(new Error(reason, cause ? { cause } : undefined));
    this.assertHeld();
    throw new LockCompromisedError(this.sessionId); // not reached: assertHeld throws
  }

  private async closeHandles(): Promise<void> {
    const handles = [this.fh, this.syncFh];
    this.syncFh = undefined;
    await Promise.all(handles.map((h) => h?.close().catch(() => undefined)));
  }

  async writeBlob(hash: string, bytes: Uint8Array, options: { durable?: boolean } = {}): Promise<boolean> {
    this.assertHeld();
    // The name becomes a path: anything but a sha256 (e.g. "../..") could write outside the store.
    if (!isBlobHash(hash))
      throw new InvalidArgumentError(`"${hash}" is not a blob name: a blob is named by its lowercase hex sha256.`);
    return writeBlobFile(this.layout, this.sessionId, hash, bytes, options.durable ?? true);
  }

  async writeScanBlobs(
    blobs: Iterable<readonly [hash: string, bytes: Uint8Array]>,
    options: { callerWaits?: boolean } = {},
  ): Promise<string[]> {
    this.assertHeld();
    const all = [...blobs];
    for (const [hash] of all)
      if (!isBlobHash(hash))
        throw new InvalidArgumentError(`"${hash}" is not a blob name: a blob is named by its lowercase hex sha256.`);
    return writeBlobFiles(this.layout, this.sessionId, all, false, options);
  }

  async syncBlobs(hashes: Iterable<string>): Promise<void> {
    this.assertHeld();
    await syncBlobFiles(this.layout, this.sessionId, [...hashes].filter(isBlobHash));
  }

  async compactBlobs(): Promise<void> {
    this.assertHeld();
    compactPackIfDead(this.layout, this.sessionId);
  }

  async hasBlob(hash: string): Promise<boolean> {
    if (!isBlobHash(hash)) return false;
    return blobExists(this.layout, this.sessionId, hash);
  }

  async deleteBlob(hash: string): Promise<void> {
    this.assertHeld();
    if (!isBlobHash(hash)) return;
    await deleteBlobFile(this.layout, this.sessionId, hash);
  }

  async deleteBlobs(hashes: readonly string[]): Promise<void> {
    this.assertHeld();
    await deleteBlobFiles(this.layout, this.sessionId, hashes);
  }

  async discardPartialWrites(): Promise<void> {
    this.assertHeld();
    await discardIncomingBlobs(this.layout, this.sessionId);
  }

  async sweepLeftovers(options: { dryRun?: boolean } = {}): Promise<string[]> {
    this.assertHeld();
    const found = await findLeftovers(this.layout, this.sessionId);
    if (!options.dryRun)
      for (const name of found) await rm(join(this.layout.dir(this.sessionId), name), { force: true });
    // What taking the lock swept is still news to the first caller that asks (gc's report), whether or not the
    // lock was already held when it asked.
    const unreported = options.dryRun ? this.sweptWhenTaken : this.sweptWhenTaken.splice(0);
    return [...new Set([...unreported, ...found])];
  }

  /** Sweeps leftovers as the lock is taken, and keeps their names for the next `sweepLeftovers`. */
  async sweepWhenTaken(): Promise<void> {
    this.sweptWhenTaken.push(...(await this.sweepLeftovers()));
  }

  async writeRecord(name: string, value: unknown, options: { durable?: boolean } = {}): Promise<void> {
    this.assertHeld();
    assertRecordName(name);
    this.recordsFolder();
    await writeFileAtomic(this.layout.record(this.sessionId, name), JSON.stringify(value), options);
  }

  /**
   * records/, checked (no symlink in its place) and made on first use, with synchronous calls: a rewind writes and
   * deletes records several times, each look a round trip through the pool otherwise (docs/ARCHITECTURE.md,
   * "Batched file work").
   */
  private recordsFolder(): string {
    const records = this.layout.records(this.sessionId);
    if (!checkStoreFolderSync(this.sessionId, records)) mkdirSync(records, { recursive: true });
    return records;
  }

  async writeRecordWithBlobs(name: string, value: unknown, blobs: readonly string[]): Promise<void> {
    this.assertHeld();
    assertRecordName(name);
    const records = this.recordsFolder();
    const hashes = blobs.filter(isBlobHash);
    await writeFileAtomic(this.layout.record(this.sessionId, name), JSON.stringify(value), {
      syncData: (syncTemp) => syncBlobFilesWith(this.layout, this.sessionId, hashes, records, syncTemp),
    });
  }

  async deleteRecord(name: string, options: { archivedLog?: boolean } = {}): Promise<void> {
    this.assertHeld();
    assertRecordName(name);
    checkStoreFolderSync(this.sessionId, this.layout.records(this.sessionId));
    try {
      unlinkSync(this.layout.record(this.sessionId, name)); // one call: rm() looks twice first
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    if (options.archivedLog) await rm(this.layout.archivedLog(this.sessionId, name), { force: true });
  }

  async release(): Promise<void> {
    if (this.released) return;
    const lost = this.compromisedBy !== undefined || this.lock.lapsed();
    this.released = true;
    this.onRelease();
    await this.closeHandles();
    // A lost lock may already belong to someone else: releasing it would free their lock.
    await (lost ? this.lock.abandon() : this.lock.release()).catch(() => undefined);
  }
}

const DSYNC_APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_DSYNC;

function assertRecordName(name: string): void {
  if (!isRecordName(name)) throw new InvalidArgumentError(`Invalid record name "${name}".`);
}
