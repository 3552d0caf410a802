import type { StoredEvent } from "../core/events.js";

/**
 * The storage seam. A backend keeps three things per session — an event log, a blob store and
 * a session lock — and nothing about event types, checkpoints or rewinds. The filesystem
 * backend (`fsBackend`) is the default; every backend must pass `runBackendConformance` from
 * `agent-tape/testing`.
 *
 * Writes happen only through a {@link LockedSession}, which only {@link StorageBackend.lock}
 * can create: a function that takes one can only be called by code holding the lock, and
 * since the lock is not re-entrant, such code must never call `lock` again for that session.
 */
export interface StorageBackend {
  /** Short name used in messages and the conformance suite, e.g. "fs". */
  readonly name: string;
  /**
   * Optional: how many session locks one process may hold at once through this backend, where each held lock
   * ties up something scarce (PostgreSQL: a pooled connection per lock). A store keeping idle leases gives up the
   * oldest idle one before taking a lock past this number, instead of waiting for one to run out. Absent: no limit.
   */
  readonly maxHeldLocks?: number;

  /**
   * Makes a new session with `events` already in its log (a fork's prefix), visible to readers
   * all at once. Throws SESSION_EXISTS if the id is taken. `events` may be an async iterable, so a
   * long prefix streams through without being held; it is consumed before `blobsFrom.hashes` is
   * read, so a caller may collect the hashes as the events pass.
   */
  createSession(record: SessionRecord, events?: NewSessionEvents, options?: CreateSessionOptions): Promise<void>;
  /** The record written at creation, or undefined if there is no such session. */
  getSession(id: string, options?: SignalOption): Promise<SessionRecord | undefined>;
  /** Ids of every session, in no particular order. */
  listSessionIds(options?: SignalOption): Promise<string[]>;
  /** Removes the session, its log and its blobs. Returns false if there was none. */
  deleteSession(id: string, options?: SignalOption): Promise<boolean>;

  /** The last complete event of the log without taking the lock (undefined when empty). */
  lastEvent(id: string, options?: SignalOption): Promise<StoredEvent | undefined>;
  /**
   * Streams the log in sequence order, holding memory flat however long it is. A torn last
   * line (a crash mid-append) is not yielded; a corrupt line elsewhere throws LOG_CORRUPT,
   * unless `onCorrupt` is given, in which case it is reported there and skipped.
   */
  readEvents(id: string, options?: ReadEventsOptions): AsyncIterable<StoredEvent>;
  /**
   * Optional: the same events as `readEvents`, in arrays (a chunk's worth each), so a long replay
   * pays one await per array instead of one per event. `SessionStore.read` uses it when present.
   */
  readEventBatches?(id: string, options?: ReadEventsOptions): AsyncIterable<StoredEvent[]>;
  /**
   * Bytes of a blob, unverified; undefined when absent. Callers that care re-hash. With `maxBytes` (the
   * length the referencing snapshot recorded) no more than `maxBytes + 1` bytes come back, and no more than
   * about that is read or inflated: a blob longer than it should be is seen to be (and a compression bomb
   * never inflates past what was recorded, whatever length the blob file itself claims).
   */
  readBlob(id: string, hash: string, options?: BlobReadOptions): Promise<Buffer | undefined>;
  /**
   * Optional: the sha256 and length of a blob's bytes, read as a stream (memory: a chunk, whatever the blob
   * holds or claims); undefined when absent. Hashing stops past `maxBytes + 1` bytes. `verify` uses it when
   * present, else `readBlob` with `maxBytes`.
   */
  digestBlob?(id: string, hash: string, options?: BlobReadOptions): Promise<BlobDigest | undefined>;
  /** Hashes of every blob the session holds. */
  listBlobs(id: string, options?: SignalOption): Promise<string[]>;
  /**
   * Optional (with `sizeOf`): the bytes a blob takes as stored — compressed where compression paid —
   * which is what deleting it frees; undefined when absent. Without it, a blob counts its original bytes.
   */
  storedBlobBytes?(id: string, hash: string, options?: SignalOption): Promise<number | undefined>;
  /** A named side record (a rewind intent, an archive), or undefined. Readable without the lock. */
  readRecord(id: string, name: string, options?: SignalOption): Promise<unknown>;
  /** Names of the side records a session holds. */
  listRecords(id: string, options?: SignalOption): Promise<string[]>;
  /**
   * Optional (with {@link LockedSession.archiveLogAfter}): the bytes a record's archived log range holds, in
   * chunks, as they were copied; nothing when there are none. A chunk may be read into again once the next is
   * asked for: keep a copy of what must outlive it. Unverified: callers check them against the
   * {@link ArchivedLog} they were given. Memory stays flat however long the range.
   */
  readArchivedLog?(id: string, name: string, options?: SignalOption): AsyncIterable<Buffer>;
  /**
   * Optional: the local folder the backend keeps its sessions in. A workspace scan leaves it out
   * when it lies inside the workspace, so the store never snapshots itself.
   */
  readonly localFolder?: string;
  /** Bytes the session takes on disk (log, blobs, records), when the backend can tell. */
  sizeOf?(id: string, options?: SignalOption): Promise<number>;
  /**
   * Optional: the bytes of `sizeOf`, part by part. Throws SESSION_NOT_FOUND when there is no such
   * session. Costs a walk of the session's blob folders (one stat per blob) on the fs backend.
   */
  usage?(id: string, options?: SignalOption): Promise<StorageUsage>;

  /**
   * Waits for the session's exclusive lock (across processes) and returns the only handle that
   * can write. Throws SESSION_NOT_FOUND, or LOCKED after `waitMs`. A lock left by a crashed
   * process is taken over once stale.
   */
  lock(id: string, options?: LockOptions): Promise<LockedSession>;
  /** Releases every lock this backend holds. Idempotent. */
  close(): Promise<void>;
}

/** A byte range of the log copied beside it, as {@link LockedSession.archiveLogAfter} made it. */
export interface ArchivedLog {
  /** Its length in bytes. */
  bytes: number;
  /** The sha256 of those bytes, lowercase hex. */
  sha256: string;
  /** How many lines (events) it holds. */
  events: number;
}

/** Where a session's bytes are, as {@link StorageBackend.usage} counts them. */
export interface StorageUsage {
  /** The event log. */
  log: number;
  /** The blobs (before-snapshots), as stored: compressed where compression paid. */
  blobs: number;
  /** How many blobs. */
  blobCount: number;
  /** Side records: rewind archives, intents, the workspace index. */
  records: number;
  /** Everything else in the session (its creation record, lock files). */
  other: number;
  /** The sum of the above: what `sizeOf` reports. */
  total: number;
}

export interface SessionRecord {
  id: string;
  createdAt: string;
  title?: string;
  /** Absolute path of the workspace the session's checkpoints are relative to. */
  workspace?: string;
  /** Set on a fork: where it came from. */
  parent?: { id: string; atSequence: number };
}

/** The events a new session starts with: an array, or a stream of them in sequence order. */
export type NewSessionEvents = readonly StoredEvent[] | AsyncIterable<StoredEvent>;

export interface CreateSessionOptions extends SignalOption {
  /** Blobs the new session starts with, taken from another session (a fork's checkpoints). */
  blobsFrom?: { sessionId: string; hashes: Iterable<string> };
}

export interface SignalOption {
  signal?: AbortSignal;
}

export interface ReadEventsOptions extends SignalOption {
  fromSequence?: number;
  toSequence?: number;
  /** Called for each corrupt line instead of throwing LOG_CORRUPT (salvage read). */
  onCorrupt?: (bad: CorruptLine) => void;
}

export interface CorruptLine {
  /** 1-based line number in the log. */
  line: number;
  reason: string;
  /** The line's text, cut to 200 characters. */
  text: string;
}

export interface LockOptions extends SignalOption {
  /** How long to wait for another holder before LOCKED. */
  waitMs?: number;
  /** Told when the lock is found held by someone else, then about once a second while waiting. Must not throw. */
  onWait?: ((wait: LockWait) => void) | undefined;
}

/** What a process waiting for a session's lock knows about the wait (docs/ARCHITECTURE.md, "Lock lease"). */
export interface LockWait {
  sessionId: string;
  /** The process that took the lock, when it said so (the fs backend's `events.jsonl.holder`). */
  holderPid?: number;
  /** Whether that process still runs on this machine: false means it died, and its lock is taken once stale. */
  holderAlive?: boolean;
  /** Milliseconds until the lock counts as stale (and is taken over) if its holder stops refreshing it. */
  staleInMs: number;
  /** Milliseconds waited so far. */
  waitedMs: number;
}

export type Durability = "fsync" | "batch" | "none";

export interface AppendOptions {
  /** Resolve only once the bytes are on stable storage (fsync); false hands them to the OS. @default true */
  sync?: boolean;
  /**
   * The events are separate appends that share one write (group commit): after a crash any prefix of
   * them may be kept. Otherwise the events of one `append` call are all or nothing, across a crash too.
   * @default false
   */
  separately?: boolean;
}

/** The session, held exclusively. Every method throws LOCK_COMPROMISED once the lock is lost. */
export interface LockedSession {
  readonly sessionId: string;
  /** Highest sequence in the log (0 when empty); exact, since nobody else can write now. */
  readonly lastSequence: number;
  /** True until `release()`, or until the lock is found to be lost. */
  readonly held: boolean;

  /**
   * Appends events all or nothing, also across a crash (unless `separately`). Each sequence must be
   * greater than the one before it (and than `lastSequence`); gaps are allowed, since a rewind marker
   * takes the number after the highest ever written, not after the truncated end.
   */
  append(events: readonly StoredEvent[], options?: AppendOptions): Promise<void>;
  /** Atomically cuts the log back to the events with `sequence <= sequence`. */
  truncateAfter(sequence: number): Promise<void>;
  /**
   * Optional (with {@link StorageBackend.readArchivedLog} and {@link appendStream}): copies the log's bytes
   * after the event `sequence` (the lines of every later event, as they are) beside the record `name`,
   * replacing any copy there, whole or not at all across a process crash (a power loss may lose it);
   * `deleteRecord(name, { archivedLog: true })` removes it. The copy streams: its memory does not follow the
   * range (a rewind's archive; docs/ARCHITECTURE.md, "Blobs").
   */
  archiveLogAfter?(sequence: number, name: string): Promise<ArchivedLog>;
  /**
   * Optional: appends events that come as a stream, all or nothing like one {@link append} of them (every
   * line marked with `batch`, whose first and last sequences they must be), holding only a chunk at a time.
   */
  appendStream?(
    events: AsyncIterable<StoredEvent>,
    batch: { first: number; last: number },
    options?: AppendOptions,
  ): Promise<void>;

  /**
   * Stores bytes under their sha256; an existing blob costs no write. Returns true if written.
   * With `durable: false` the write survives a process crash but not a power loss, and costs no
   * fsync (the workspace index stores a whole tree this way); {@link syncBlobs} makes such blobs
   * durable before anything durable references them.
   */
  writeBlob(hash: string, bytes: Uint8Array, options?: { durable?: boolean }): Promise<boolean>;
  /**
   * Optional: {@link writeBlob} for many blobs at once, each as `writeBlob` would store it, in as few round
   * trips as the backend can (PostgreSQL: one statement per batch of blobs). Returns the hashes it wrote (those
   * already stored are left out). All or nothing: when it throws, none of them was written. The blob layer uses
   * it for a capture's snapshot when present (docs/ARCHITECTURE.md, "Blobs").
   */
  writeBlobs?(
    blobs: Iterable<readonly [hash: string, bytes: Uint8Array]>,
    options?: { durable?: boolean },
  ): Promise<string[]>;
  /**
   * Optional: the blobs a workspace scan stores, many at once and most never read again: each as `writeBlob`
   * with `durable: false` would store it ({@link syncBlobs} makes those a checkpoint references durable), all or
   * nothing, returning the hashes it wrote. A backend may keep them where many small ones cost little (the fs
   * backend's pack). Without it the scan uses {@link writeBlobs}, or `writeBlob` one by one
   * (docs/ARCHITECTURE.md, "Blobs"). `callerWaits`: the caller does nothing else until this returns (a rewind's
   * undo copy, unlike a scan, which reads on): the backend may use the calling thread for the work too.
   */
  writeScanBlobs?(
    blobs: Iterable<readonly [hash: string, bytes: Uint8Array]>,
    options?: { callerWaits?: boolean },
  ): Promise<string[]>;
  /**
   * Optional (backends whose writes are always durable need not have it): makes blobs written
   * with `durable: false` durable. Blobs that do not exist are ignored.
   */
  syncBlobs?(hashes: Iterable<string>): Promise<void>;
  hasBlob(hash: string): Promise<boolean>;
  deleteBlob(hash: string): Promise<void>;
  /**
   * Optional: {@link deleteBlob} for many blobs, in as few writes as the backend can (the fs backend: one append
   * to its pack for the packed ones, however many). Names that are not blobs, or not stored, are ignored. A prune
   * uses it when present (docs/ARCHITECTURE.md, "Blobs").
   */
  deleteBlobs?(hashes: readonly string[]): Promise<void>;
  /**
   * Optional: gives back the space deleted blobs still take where a backend keeps it until later (the fs
   * backend's pack: docs/ARCHITECTURE.md, "Blobs"). `gc` calls it after deleting, so what it frees is freed.
   */
  compactBlobs?(): Promise<void>;
  /**
   * Optional: removes what blob writes cut short by a crash left behind (never a finished blob).
   * Called by recovery when a holder died while writing blobs.
   */
  discardPartialWrites?(): Promise<void>;
  /**
   * Optional: removes the temp files that replacing a file cut short by a failure or a crash left beside
   * the log or among the records (never a live file), and returns their names relative to the session
   * folder. With `dryRun`, only names them. The fs backend runs it at every lock acquisition; gc calls it.
   */
  sweepLeftovers?(options?: { dryRun?: boolean }): Promise<string[]>;
  /**
   * Optional: whether someone (another process, another store) is waiting for this lock. A store
   * busy for longer than `lockMaxHoldMs` hands the lock over only if so; without this method it
   * hands over every `lockMaxHoldMs`, waiter or not, and pays a pause each time.
   */
  othersWaiting?(): Promise<boolean>;

  /**
   * Atomically writes (replaces) a named side record. With `durable: false` it survives a
   * process crash but not power loss, and costs no fsync.
   */
  writeRecord(name: string, value: unknown, options?: { durable?: boolean }): Promise<void>;
  /**
   * Optional: {@link writeRecord}, durable, with `blobs` (written `durable: false`) made durable no later than
   * the record, in one wait for the disk where the backend can (the fs backend: one syncfs covers the blobs and
   * the record's bytes, then the rename and its folder's fsync). Without it the caller makes the blobs durable
   * first ({@link syncBlobs}), then writes the record: two waits (docs/ARCHITECTURE.md, "Rewind intent").
   */
  writeRecordWithBlobs?(name: string, value: unknown, blobs: readonly string[]): Promise<void>;
  /** Removes the record; with `archivedLog`, the log range archived beside it too (see {@link archiveLogAfter}). */
  deleteRecord(name: string, options?: { archivedLog?: boolean }): Promise<void>;
  /**
   * Optional: the database steps of a rewind (or an undo) whose files are done, as one transaction
   * (docs/ARCHITECTURE.md, "Rewind intent"). First `archive`, if given, is copied as {@link archiveLogAfter}
   * copies it (on its own: a copy names nothing, and a second try replaces it); then, all or nothing and durable
   * when it returns: the log cut after `truncateAfter` (as {@link truncateAfter}), `deleteBlobs` and
   * `deleteRecords` (each with its archived log) removed, and what `finalWrites` returns, given the copy,
   * appended (one batch) and written. Every appended sequence is above {@link lastSequence}; the records written
   * are none of those deleted. Without it, the caller makes the same calls one by one.
   */
  finishRewind?(steps: RewindFinish): Promise<void>;

  /** Throws LOCK_COMPROMISED if the lock was lost. */
  assertHeld(): void;
  /** Gives the lock up. Idempotent. */
  release(): Promise<void>;
}

/** What {@link LockedSession.finishRewind} does, in its order. */
export interface RewindFinish {
  /** The log's bytes after `after` to copy beside record `name` first (a rewind's archive of what it cuts). */
  archive?: { after: number; name: string };
  /** Where to cut the log: the events after it go. */
  truncateAfter: number;
  /** Blobs to delete (those nothing references any more). */
  deleteBlobs: readonly string[];
  /** Records to delete, each with its archived log if it has one. */
  deleteRecords: readonly string[];
  /** Given the copy (undefined without `archive`): the events to append (their sequences set) and records to write. */
  finalWrites(archived: ArchivedLog | undefined): {
    append: readonly StoredEvent[];
    writeRecords: readonly { name: string; value: unknown }[];
  };
}

/** How much of a blob a reader is prepared to hold. */
export interface BlobReadOptions extends SignalOption {
  /** The length the referencing snapshot recorded: a blob longer than it is cut to `maxBytes + 1` bytes. */
  maxBytes?: number;
}

/** What {@link StorageBackend.digestBlob} finds: the sha256 (hex) and length of the bytes it read. */
export interface BlobDigest {
  sha256: string;
  bytes: number;
}
