import { randomBytes } from "node:crypto";
import { link, copyFile, lstat, mkdir, mkdtemp, open, readdir, rename, rm, stat } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseEventLine, serializeEvent, type LineMark } from "../../core/envelope.js";
import { unfinishedBatchStart } from "./unfinished-batch.js";
import { WholeBatches } from "./whole-batches.js";
import { LogCorruptError, SessionExistsError, SessionNotFoundError, StoreTamperedError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import { assertSessionId } from "../../core/ids.js";
import type {
  CreateSessionOptions,
  LockOptions,
  LockedSession,
  NewSessionEvents,
  ReadEventsOptions,
  SessionRecord,
  SignalOption,
  BlobReadOptions,
  BlobDigest,
  StorageBackend,
  StorageUsage,
} from "../types.js";
import { fsyncDir } from "../../core/atomic-file.js";
import { withTypedStorageErrors } from "../typed-storage-errors.js";
import { forEachLimited, mapLimited } from "../../core/bounded-concurrency.js";
import { digestBlobFile, listBlobFiles, readBlobFile, storedBlobFileBytes } from "./blobs.js";
import { copyPackedInto, listPacked, packSegmentCount } from "./blob-pack.js";
import { isBlobHash, isRecordName } from "../names.js";
import { SessionLayout } from "./layout.js";
import { lineNumberAt, readLines, readTail, type OpenLog } from "./lines.js";
import { lookPastBatch } from "./batch-end.js";
import { keptEndFor } from "./seek.js";
import { cutMark } from "./log-cuts.js";
import { acquireFileLock, othersWaiting } from "./lock.js";
import { moveLogToNewInode } from "./move-log.js";
import { FsLockedSession } from "./locked-session.js";
import { checkStoreFolder, openStoreFile, READ, readStoreFile } from "./store-files.js";
import { readArchivedLogFile } from "./archive-log.js";
import { signalOf } from "../../core/defined-fields.js";

export interface FsBackendOptions {
  /** Folder that holds one sub-folder per session. Created on first use. */
  root: string;
  /**
   * A lock whose holder stopped refreshing it for this long (a crashed or frozen process) is
   * taken over. Lower means faster recovery after a crash, but a process whose event loop is
   * blocked longer than this loses its lock (LOCK_COMPROMISED). Minimum 2000.
   * @default 5000
   */
  lockStaleMs?: number;
  /**
   * Write blobs compressed (deflate-raw) when that saves at least a tenth; incompressible content
   * stays raw. Costs CPU on capture and saves most of the bytes of source code (the codec and its
   * figures: bench/compression-choice.mjs; docs/ARCHITECTURE.md, "Blobs"). Blobs are read either way.
   * @default true
   */
  compressBlobs?: boolean;
  /** Blobs stored in fewer bytes than this go into the session's pack; 0: each one a file. @default 4096 */
  packBlobsUnder?: number;
}

export const DEFAULT_LOCK_STALE_MS = 5000;

/**
 * The default backend: one folder per session holding `events.jsonl`, `session.json`,
 * `blobs/ab/abcdef…` and `records/`. Several processes may share a root; the session lock is a
 * proper-lockfile lock folder beside the log.
 */
export function fsBackend(options: FsBackendOptions): StorageBackend {
  return withTypedStorageErrors(new FsBackend(options));
}

class FsBackend implements StorageBackend {
  readonly name = "fs";
  private readonly layout: SessionLayout;
  private readonly staleMs: number;
  private readonly openLocks = new Set<LockedSession>();

  get localFolder(): string {
    return this.layout.root;
  }

  constructor(options: FsBackendOptions) {
    this.layout = new SessionLayout(resolve(options.root), options.compressBlobs ?? true, options.packBlobsUnder);
    this.staleMs = Math.max(2000, options.lockStaleMs ?? DEFAULT_LOCK_STALE_MS);
  }

  async createSession(
    record: SessionRecord,
    events: NewSessionEvents = [],
    options: CreateSessionOptions = {},
  ): Promise<void> {
    assertSessionId(record.id);
    options.signal?.throwIfAborted();
    const dir = this.layout.dir(record.id);
    await mkdir(this.layout.root, { recursive: true });
    // Build the session in a hidden staging folder and rename it into place, so a crash or a
    // concurrent reader never sees a session without its log, metadata or blobs.
    // mkdtemp: a unique name even for two creates of one id in the same millisecond.
    const staging = await mkdtemp(join(this.layout.root, `.staging-${record.id}-`));
    try {
      await writeLogSynced(join(staging, "events.jsonl"), events, options.signal);
      await writeFileSynced(join(staging, "session.json"), JSON.stringify(record, null, 2) + "\n");
      if (options.blobsFrom) await this.linkBlobs(options.blobsFrom.sessionId, staging, options.blobsFrom.hashes);
      await fsyncDir(staging);
      try {
        await rename(staging, dir);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOTEMPTY" || code === "EEXIST") throw new SessionExistsError(record.id);
        throw error;
      }
      await fsyncDir(this.layout.root);
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * Hard-links blobs (copies where the filesystem refuses links) into a staging session folder, a
   * few at a time: a fork of a long session may carry thousands, and one at a time waits out each
   * round trip.
   */
  private async linkBlobs(fromId: string, stagingDir: string, hashes: Iterable<string>): Promise<void> {
    assertSessionId(fromId);
    const all = [...hashes].filter(isBlobHash);
    const packed = copyPackedInto(this.layout, fromId, join(stagingDir, "blobs"), all);
    const wanted = all.filter((hash) => !packed.has(hash));
    const shards = [...new Set(wanted.map((hash) => hash.slice(0, 2)))];
    await forEachLimited(shards, LINK_CONCURRENCY, (shard) =>
      mkdir(join(stagingDir, "blobs", shard), { recursive: true }).then(() => undefined),
    );
    await forEachLimited(wanted, LINK_CONCURRENCY, async (hash) => {
      const from = this.layout.blob(fromId, hash);
      const to = join(stagingDir, "blobs", hash.slice(0, 2), hash);
      try {
        await link(from, to);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return; // never written or pruned: the checkpoint's reader reports it
        if (code === "EEXIST") return;
        await copyFile(from, to);
      }
    });
  }

  async getSession(id: string, options: SignalOption = {}): Promise<SessionRecord | undefined> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    let text: string;
    try {
      text = (await readStoreFile(id, this.layout.meta(id))).toString("utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      // session.json is derived: if it is gone but the log is there, the session still is.
      try {
        const info = await lstat(this.layout.log(id));
        if (!info.isFile()) return undefined;
        return { id, createdAt: info.birthtime.toISOString() };
      } catch {
        return undefined;
      }
    }
    return parseSessionRecord(id, this.layout.meta(id), text);
  }

  async listSessionIds(options: SignalOption = {}): Promise<string[]> {
    options.signal?.throwIfAborted();
    let entries;
    try {
      entries = await readdir(this.layout.root, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    return entries.filter((e) => e.isDirectory() && !e.name.startsWith(".")).map((e) => e.name);
  }

  async deleteSession(id: string, options: SignalOption = {}): Promise<boolean> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    const dir = this.layout.dir(id);
    // Rename first so the session disappears at once, then remove at leisure.
    const trash = join(this.layout.root, `.deleted-${id}-${randomBytes(8).toString("hex")}`);
    try {
      await rename(dir, trash);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw error;
    }
    await rm(trash, { recursive: true, force: true });
    return true;
  }

  async lastEvent(id: string, options: SignalOption = {}): Promise<StoredEvent | undefined> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    const file = this.layout.log(id);
    let fh;
    try {
      fh = await openStoreFile(id, file, READ);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new SessionNotFoundError(id);
      throw error;
    }
    try {
      // Read backwards with no lock: a cut in place meanwhile (an ftruncate, then appends at the same offsets)
      // can make the bytes read a mix of two logs, which looks like damage. Each cut is recorded before the
      // ftruncate and again after it (log-cuts.ts), and shrinks the file: either seen after the read means the
      // tail is read again, on the log as it is now (docs/ARCHITECTURE.md, "On disk").
      const cuts = this.layout.cuts(id);
      for (let attempt = 1; ; attempt++) {
        const mark = cutMark(cuts);
        const size = (await fh.stat()).size;
        const cutMeanwhile = async () => cutMark(cuts) !== mark || (await fh.stat()).size < size;
        let last: StoredEvent | undefined;
        try {
          last = await lastWholeEvent(file, fh, size);
        } catch (error) {
          if (attempt < MAX_TAIL_READS && (await cutMeanwhile())) continue;
          throw error;
        }
        if (attempt < MAX_TAIL_READS && (await cutMeanwhile())) continue;
        return last;
      }
    } finally {
      await fh.close();
    }
  }

  async *readEvents(id: string, options: ReadEventsOptions = {}): AsyncGenerator<StoredEvent> {
    for await (const batch of this.readEventBatches(id, options)) yield* batch;
  }

  /** The log one chunk's worth of events at a time: one await per 64 KB, not per event. */
  async *readEventBatches(id: string, options: ReadEventsOptions = {}): AsyncGenerator<StoredEvent[]> {
    assertSessionId(id);
    const file = await this.existingLog(id);
    const from = options.fromSequence ?? 0;
    const to = options.toSequence ?? Number.POSITIVE_INFINITY;
    let previous = 0;
    // From a sequence past the start: found by reading backwards from the end (see seek.ts), so a
    // read of the last few events costs the same however long the log.
    const startAt =
      from > 1
        ? async (fh: FileHandle) => (await keptEndFor(fh, (await fh.stat()).size, from - 1))?.offset ?? 0
        : undefined;
    // A batch's events come out once its end is known to be in the log: never part of an appendMany
    // (whole-batches.ts); one too big to hold is looked past in the file and streamed (batch-end.ts).
    const wholeBatches = new WholeBatches();
    const released: StoredEvent[] = [];
    const mark: LineMark = { batch: undefined }; // the batch mark of the line at hand
    let log: OpenLog | undefined;
    const reading = {
      ...signalOf(options),
      startAt,
      cutsFile: this.layout.cuts(id),
      onOpen: (open: OpenLog) => (log = open),
    };
    let chunks = 0;
    let lookedAt = -1; // the chunk in which the reader last looked past a batch: once per chunk at most
    for await (const lines of readLines(file, reading)) {
      chunks++;
      const batch: StoredEvent[] = [];
      /** Moves what was released into `batch`, within the range; false once past its end. */
      const handOut = (): boolean => {
        for (const ready of released) {
          if (ready.sequence < from) continue;
          if (ready.sequence > to) return false;
          batch.push(ready);
        }
        released.length = 0;
        return true;
      };
      for (const line of lines) {
        let event = parseEventLine(line.text, mark);
        if (typeof event !== "string" && event.sequence <= previous)
          event = `sequence ${event.sequence} does not follow ${previous}`;
        if (typeof event === "string") {
          // The damage is not a batch's missing end: the events held back before it are in the log for good.
          wholeBatches.flush(released);
          for (const ready of released) if (ready.sequence >= from && ready.sequence <= to) batch.push(ready);
          released.length = 0;
          // Started mid-file: the line's number is counted only now, on the way to reporting it.
          const number = Number.isNaN(line.number) ? await lineNumberAt(file, line.end - 1) : line.number;
          if (!options.onCorrupt) {
            if (batch.length > 0) yield batch; // the events before the damage still come out
            throw new LogCorruptError(file, number, event);
          }
          options.onCorrupt({ line: number, reason: event, text: line.text.slice(0, 200) });
          continue;
        }
        previous = event.sequence;
        // Most lines carry no batch mark while nothing is held: straight through, no copying (replay speed).
        if (wholeBatches.passes(mark.batch)) {
          if (event.sequence < from) continue;
          if (event.sequence > to) {
            if (batch.length > 0) yield batch;
            return;
          }
          batch.push(event);
          continue;
        }
        // A batch that starts past the range has nothing wanted, finished or not: no need to hold it.
        if (wholeBatches.idle && event.sequence > to) {
          if (batch.length > 0) yield batch;
          return;
        }
        wholeBatches.take(event, mark.batch, line.text.length, released);
        if (!handOut()) {
          if (batch.length > 0) yield batch;
          return;
        }
        const outgrown = wholeBatches.outgrown();
        if (outgrown === undefined || log === undefined || lookedAt === chunks) continue;
        lookedAt = chunks;
        const past = await lookPastBatch(file, log, line.end, outgrown, event.sequence, options.signal);
        if (past === "released") {
          wholeBatches.stream(released);
          if (!handOut()) {
            if (batch.length > 0) yield batch;
            return;
          }
        } else if (past === "unfinished") {
          // The log ends inside this batch: it is left out, as a torn line is, and nothing follows it.
          if (batch.length > 0) yield batch;
          return;
        }
        // "cut": the log changed under the look; the next read meets the cut (lines.ts), then this looks again.
      }
      if (batch.length > 0) yield batch;
    }
  }

  async readBlob(id: string, hash: string, options: BlobReadOptions = {}): Promise<Buffer | undefined> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    return readBlobFile(this.layout, id, hash, options.maxBytes);
  }

  async digestBlob(id: string, hash: string, options: BlobReadOptions = {}): Promise<BlobDigest | undefined> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    return digestBlobFile(this.layout, id, hash, options.maxBytes);
  }

  async storedBlobBytes(id: string, hash: string, options: SignalOption = {}): Promise<number | undefined> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    return storedBlobFileBytes(this.layout, id, hash);
  }

  async listBlobs(id: string, options: SignalOption = {}): Promise<string[]> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    return listBlobFiles(this.layout, id);
  }

  async readRecord(id: string, name: string, options: SignalOption = {}): Promise<unknown> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    if (!isRecordName(name)) return undefined;
    try {
      await checkStoreFolder(id, this.layout.records(id));
      const path = this.layout.record(id, name);
      return parseStoreJson(id, path, (await readStoreFile(id, path)).toString("utf8"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  async *readArchivedLog(id: string, name: string, options: SignalOption = {}): AsyncIterable<Buffer> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    if (!isRecordName(name)) return;
    await checkStoreFolder(id, this.layout.records(id));
    yield* readArchivedLogFile(this.layout.archivedLog(id, name), options.signal);
  }

  async listRecords(id: string, options: SignalOption = {}): Promise<string[]> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    try {
      await checkStoreFolder(id, this.layout.records(id));
      const names = await readdir(this.layout.records(id));
      return names.filter((n) => n.endsWith(".json") && !n.startsWith(".")).map((n) => n.slice(0, -5));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
  }

  async sizeOf(id: string, options: SignalOption = {}): Promise<number> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    return folderBytes(this.layout.dir(id));
  }

  async usage(id: string, options: SignalOption = {}): Promise<StorageUsage> {
    assertSessionId(id);
    options.signal?.throwIfAborted();
    const log = await this.existingLog(id);
    const [logBytes, blobs, records, total] = await Promise.all([
      stat(log).then((info) => info.size),
      folderUsage(this.layout.blobs(id)),
      folderUsage(this.layout.records(id)),
      folderUsage(this.layout.dir(id)),
    ]);
    return {
      log: logBytes,
      blobs: blobs.bytes,
      blobCount: blobs.files - packSegmentCount(this.layout, id) + listPacked(this.layout, id).length,
      records: records.bytes,
      other: total.bytes - logBytes - blobs.bytes - records.bytes,
      total: total.bytes,
    };
  }

  async lock(id: string, options: LockOptions = {}): Promise<LockedSession> {
    assertSessionId(id);
    const file = await this.existingLog(id);
    let session: FsLockedSession | undefined;
    let lostEarly: Error | undefined;
    const lock = await acquireFileLock(id, file, {
      staleMs: this.staleMs,
      waitMs: options.waitMs ?? this.staleMs * 3,
      onWait: options.onWait,
      signal: options.signal,
      // proper-lockfile reports a lost lock from a timer; its default throws, crashing the process.
      onCompromised: (error) => {
        if (session) session.markCompromised(error);
        else lostEarly = error;
      },
    }).catch((error: unknown) => {
      // The session was deleted while we waited: its folder, where the lock goes, is gone.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new SessionNotFoundError(id);
      throw error;
    });
    try {
      // The holder whose lock we took as stale may be alive and still hold the log open.
      if (lock.tookOver) await moveLogToNewInode(id, file);
      session = await FsLockedSession.open(
        id,
        this.layout,
        lock,
        () => this.openLocks.delete(session!),
        () => othersWaiting(file, this.staleMs),
      );
      // Temp files a failed or killed rewrite left: no one else can be writing one now. Litter, so best-effort.
      await session.sweepWhenTaken().catch(() => undefined);
    } catch (error) {
      await lock.release().catch(() => undefined);
      throw error;
    }
    if (lostEarly) session.markCompromised(lostEarly);
    this.openLocks.add(session);
    return session;
  }

  /** The session's log path, or SESSION_NOT_FOUND when there is no such session. */
  private async existingLog(id: string): Promise<string> {
    const file = this.layout.log(id);
    try {
      await stat(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new SessionNotFoundError(id);
      throw error;
    }
    return file;
  }

  async close(): Promise<void> {
    const open = [...this.openLocks];
    this.openLocks.clear();
    await Promise.all(open.map((s) => s.release()));
  }
}

/**
 * Reads of the log's end {@link FsBackend.lastEvent} makes while cuts keep landing under it, before it reports
 * what it read (a cut each time means a rewind loop faster than a read of one line: not expected to end).
 */
const MAX_TAIL_READS = 100;

/** The last event of the log's first `size` bytes that a reader sees: not one of an unfinished batch. */
async function lastWholeEvent(file: string, fh: FileHandle, size: number): Promise<StoredEvent | undefined> {
  const tail = await readTail(fh, size);
  if (!tail.last) return undefined;
  const parsed = parseEventLine(tail.last.text);
  if (typeof parsed === "string") throw new LogCorruptError(file, await lineNumberAt(file, tail.last.start), parsed);
  // The log ends inside a batch (its writer was killed mid-write, or is still writing): readers do not
  // see it, so the last event is the one before it.
  const start = await unfinishedBatchStart(file, fh, tail);
  if (start === undefined) return parsed;
  const before = (await readTail(fh, start)).last;
  if (!before) return undefined;
  const event = parseEventLine(before.text);
  if (typeof event === "string") throw new LogCorruptError(file, await lineNumberAt(file, before.start), event);
  return event;
}

/** Blob links (or copies) in flight at once during a fork. */
const LINK_CONCURRENCY = 8;
/**
 * A new log is written in pieces of about this many characters, the size reads use: larger pieces
 * made fewer writes but left more garbage between collections, and were no faster (the peak with
 * these: bench "fork: 1,000,000 events, peak memory growth").
 */
const LOG_WRITE_CHUNK = 1 << 16;

/** Writes a new log from its events as they come, then syncs it. */
async function writeLogSynced(file: string, events: NewSessionEvents, signal?: AbortSignal): Promise<void> {
  const fh = await open(file, "wx", 0o644);
  try {
    let pending: string[] = [];
    let pendingLength = 0;
    for await (const event of events) {
      const line = serializeEvent(event) + "\n";
      pending.push(line);
      pendingLength += line.length;
      if (pendingLength >= LOG_WRITE_CHUNK) {
        signal?.throwIfAborted();
        await fh.writeFile(pending.join(""));
        pending = [];
        pendingLength = 0;
      }
    }
    if (pending.length > 0) await fh.writeFile(pending.join(""));
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeFileSynced(file: string, data: string): Promise<void> {
  const fh = await open(file, "wx", 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function folderBytes(dir: string): Promise<number> {
  return (await folderUsage(dir)).bytes;
}

/** Bytes and count of the regular files under `dir` (0 when it does not exist), a few stats at a time. */
async function folderUsage(dir: string): Promise<{ bytes: number; files: number }> {
  const usage = { bytes: 0, files: 0 };
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return usage;
  }
  const sizes = await mapLimited(entries, 16, async (entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return folderUsage(path);
    if (!entry.isFile()) return { bytes: 0, files: 0 };
    try {
      return { bytes: (await stat(path)).size, files: 1 };
    } catch {
      return { bytes: 0, files: 0 }; // removed while we looked (a prune, a rename into place)
    }
  });
  for (const size of sizes) {
    usage.bytes += size.bytes;
    usage.files += size.files;
  }
  return usage;
}

/**
 * A JSON file of the store, parsed. Only the library writes these, whole (temp file + rename), so one
 * that does not parse was changed by hand or by another program: STORE_TAMPERED, the parse error as cause.
 */
function parseStoreJson(sessionId: string, path: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new StoreTamperedError(sessionId, `${path} is not valid JSON (${text === "" ? "empty" : "garbled"})`, {
      cause: error,
    });
  }
}

/** session.json as `create` wrote it: an object with the session's id and a creation time, or STORE_TAMPERED. */
function parseSessionRecord(sessionId: string, path: string, text: string): SessionRecord {
  const value = parseStoreJson(sessionId, path, text) as Partial<SessionRecord> | null;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new StoreTamperedError(sessionId, `${path} does not hold a JSON object`);
  if (value.id !== sessionId)
    throw new StoreTamperedError(sessionId, `${path} names session ${JSON.stringify(value.id)}`);
  if (typeof value.createdAt !== "string") throw new StoreTamperedError(sessionId, `${path} has no "createdAt" time`);
  return value as SessionRecord;
}
