import type { FileHandle } from "node:fs/promises";
import { open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { serializeEvent, parseEventLine } from "../../core/envelope.js";
import { InvalidArgumentError, LockCompromisedError, LogCorruptError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import type { AppendOptions, LockedSession } from "../types.js";
import { fsyncDir, tempPathFor, writeFileAtomic } from "../../core/atomic-file.js";
import { blobExists, deleteBlobFile, discardIncomingBlobs, syncBlobFiles, writeBlobFile } from "./blobs.js";
import { isBlobHash, isRecordName } from "../names.js";
import type { SessionLayout } from "./layout.js";
import { checkStoreFolder, openStoreFile, READ_APPEND } from "./store-files.js";
import { readLines, readTail } from "./lines.js";
import { mkdir } from "node:fs/promises";
import { constants } from "node:fs";

/**
 * The filesystem session while its lock is held. Because nobody else can write, the log's end
 * (size and last sequence) is read once at lock time and then kept in memory: an append is one
 * `write` (+ `fdatasync`) on a kept-open descriptor, with no stat or re-read.
 */
export class FsLockedSession implements LockedSession {
  private compromisedBy: Error | undefined;
  private released = false;
  // Opened O_DSYNC on the first durable append: then one write() is both the write and the
  // fdatasync, a single trip through libuv's thread pool instead of two.
  private syncFh: FileHandle | undefined;

  private constructor(
    readonly sessionId: string,
    private readonly layout: SessionLayout,
    private fh: FileHandle,
    private size: number,
    private last: number,
    private readonly releaseLock: () => Promise<void>,
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
    releaseLock: () => Promise<void>,
    waiting: () => Promise<boolean>,
  ): Promise<FsLockedSession> {
    const file = layout.log(sessionId);
    await checkStoreFolder(sessionId, layout.dir(sessionId));
    const fh = await openStoreFile(sessionId, file, READ_APPEND);
    try {
      const tail = await readTail(fh);
      if (tail.completeEnd < tail.size) {
        await fh.truncate(tail.completeEnd);
        await fh.datasync();
      }
      let last = 0;
      if (tail.last) {
        const parsed = parseEventLine(tail.last.text);
        if (typeof parsed === "string") {
          throw new LogCorruptError(file, await lineNumberAt(file, tail.last.start), parsed);
        }
        last = parsed.sequence;
      }
      return new FsLockedSession(sessionId, layout, fh, tail.completeEnd, last, releaseLock, waiting);
    } catch (error) {
      await fh.close();
      throw error;
    }
  }

  get lastSequence(): number {
    return this.last;
  }

  get held(): boolean {
    return !this.released && this.compromisedBy === undefined;
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
    if (this.compromisedBy) throw new LockCompromisedError(this.sessionId, { cause: this.compromisedBy });
    if (this.released) throw new InvalidArgumentError(`The lock on session "${this.sessionId}" was already released.`);
  }

  async append(events: readonly StoredEvent[], options: AppendOptions = {}): Promise<void> {
    this.assertHeld();
    if (events.length === 0) return;
    let previous = this.last;
    for (const event of events) {
      if (!Number.isSafeInteger(event.sequence) || event.sequence <= previous)
        throw new InvalidArgumentError(
          `Event sequence ${event.sequence} does not come after ${previous} in session "${this.sessionId}".`,
        );
      previous = event.sequence;
    }
    let text = "";
    for (const event of events) text += serializeEvent(event) + "\n";
    const bytes = Buffer.from(text, "utf8");
    try {
      const fh =
        (options.sync ?? true)
          ? (this.syncFh ??= await openStoreFile(this.sessionId, this.layout.log(this.sessionId), DSYNC_APPEND))
          : this.fh;
      let written = 0;
      while (written < bytes.length) {
        const { bytesWritten } = await fh.write(bytes, written, bytes.length - written);
        written += bytesWritten;
      }
    } catch (error) {
      // All or nothing: take back a partial write so no fragment is left for the next append.
      await this.fh.truncate(this.size).catch(() => undefined);
      throw error;
    }
    this.size += bytes.length;
    this.last = events[events.length - 1]!.sequence;
  }

  async truncateAfter(sequence: number): Promise<void> {
    this.assertHeld();
    if (sequence >= this.last) return;
    const file = this.layout.log(this.sessionId);
    let keepBytes = 0;
    let lastKept = 0;
    outer: for await (const lines of readLines(file)) {
      for (const line of lines) {
        const parsed = parseEventLine(line.text);
        if (typeof parsed === "string") throw new LogCorruptError(file, line.number, parsed);
        if (parsed.sequence > sequence) break outer;
        keepBytes = line.end;
        lastKept = parsed.sequence;
      }
    }
    // Copy the kept prefix to a temp file and rename it over the log: readers holding the old
    // file keep a consistent view, and a crash leaves the old log or the new one, never a mix.
    const temp = tempPathFor(file);
    const out = await open(temp, "wx", 0o644);
    try {
      const buf = Buffer.allocUnsafe(64 * 1024);
      for (let pos = 0; pos < keepBytes; ) {
        const { bytesRead } = await this.fh.read(buf, 0, Math.min(buf.length, keepBytes - pos), pos);
        if (bytesRead === 0) break;
        await out.write(buf, 0, bytesRead);
        pos += bytesRead;
      }
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(temp, file);
    await fsyncDir(dirname(file));
    await this.closeHandles();
    this.fh = await openStoreFile(this.sessionId, file, READ_APPEND);
    this.size = keepBytes;
    this.last = lastKept;
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

  async syncBlobs(hashes: Iterable<string>): Promise<void> {
    this.assertHeld();
    await syncBlobFiles(this.layout, this.sessionId, [...hashes].filter(isBlobHash));
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

  async discardPartialWrites(): Promise<void> {
    this.assertHeld();
    await discardIncomingBlobs(this.layout, this.sessionId);
  }

  async writeRecord(name: string, value: unknown, options: { durable?: boolean } = {}): Promise<void> {
    this.assertHeld();
    assertRecordName(name);
    await checkStoreFolder(this.sessionId, this.layout.records(this.sessionId));
    await mkdir(this.layout.records(this.sessionId), { recursive: true });
    await writeFileAtomic(this.layout.record(this.sessionId, name), JSON.stringify(value), options);
  }

  async deleteRecord(name: string): Promise<void> {
    this.assertHeld();
    assertRecordName(name);
    await checkStoreFolder(this.sessionId, this.layout.records(this.sessionId));
    await rm(this.layout.record(this.sessionId, name), { force: true });
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.closeHandles();
    // A compromised lock may already belong to someone else: releasing it would free their lock.
    if (this.compromisedBy === undefined) await this.releaseLock().catch(() => undefined);
  }
}

const DSYNC_APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_DSYNC;

function assertRecordName(name: string): void {
  if (!isRecordName(name)) throw new InvalidArgumentError(`Invalid record name "${name}".`);
}

/** 1-based number of the line holding byte `offset` of `file`. */
export async function lineNumberAt(file: string, offset: number): Promise<number> {
  let count = 0;
  for await (const lines of readLines(file)) {
    for (const line of lines) {
      if (line.end > offset) return line.number;
      count = line.number;
    }
  }
  return count + 1;
}
