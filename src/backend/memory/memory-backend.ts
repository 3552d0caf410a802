import { parseEventLine } from "../../core/envelope.js";
import { InvalidArgumentError, SessionExistsError, SessionNotFoundError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import { assertSessionId } from "../../core/ids.js";
import { isRecordName } from "../names.js";
import type {
  BlobReadOptions,
  CreateSessionOptions,
  NewSessionEvents,
  LockOptions,
  LockedSession,
  ReadEventsOptions,
  SessionRecord,
  SignalOption,
  StorageBackend,
  StorageUsage,
} from "../types.js";
import { InProcessLocks } from "./in-process-lock.js";
import { MemoryLockedSession, toLines, type MemorySession } from "./memory-session.js";

export interface MemoryBackendOptions {
  /**
   * How long `lock` waits for another holder before LOCKED, when the caller gives no `waitMs`.
   * @default 15000 (the filesystem backend's default with its default lockStaleMs)
   */
  lockWaitMs?: number;
}

/**
 * A backend that keeps sessions in this process's memory: for fast unit tests of code built on
 * agent-tape, and as the second backend that keeps the storage seam honest (it passes the same
 * conformance suite as `fsBackend`).
 *
 * It is NOT durable — everything is gone when the process exits, whatever the store's
 * `durability` — and NOT shared: each `memoryBackend()` call has its own sessions, and another
 * process (or another instance) sees none of them. Its lock is exclusive within the instance,
 * honours `waitMs` and `signal`, and is never stale (no process can crash while holding it and
 * leave the rest of the process running).
 *
 * Events, blobs and records are copied in and out, so a caller mutating what it wrote or read
 * never changes what is stored.
 */
export function memoryBackend(options: MemoryBackendOptions = {}): StorageBackend {
  return new MemoryBackend(options.lockWaitMs ?? 15_000);
}

class MemoryBackend implements StorageBackend {
  readonly name = "memory";
  private readonly sessions = new Map<string, MemorySession>();
  private readonly locks = new InProcessLocks();
  private readonly openLocks = new Set<LockedSession>();

  constructor(private readonly defaultWaitMs: number) {}

  async createSession(
    record: SessionRecord,
    stream: NewSessionEvents = [],
    options: CreateSessionOptions = {},
  ): Promise<void> {
    const taken = this.find(record.id) !== undefined;
    options.signal?.throwIfAborted();
    if (taken) throw new SessionExistsError(record.id);
    // The whole log lives in memory here anyway.
    const events: readonly StoredEvent[] = Symbol.asyncIterator in stream ? await collect(stream) : stream;
    let previous = 0;
    for (const event of events) {
      if (!Number.isSafeInteger(event.sequence) || event.sequence <= previous)
        throw new InvalidArgumentError(
          `Event sequence ${event.sequence} does not follow ${previous} in the new session "${record.id}".`,
        );
      previous = event.sequence;
    }
    const blobs = new Map<string, Buffer>();
    if (options.blobsFrom) {
      const source = this.find(options.blobsFrom.sessionId);
      for (const hash of options.blobsFrom.hashes) {
        // Stored blobs are never mutated, so the new session may share the buffer.
        const bytes = source?.blobs.get(hash);
        if (bytes) blobs.set(hash, bytes); // a missing one is reported by whoever reads the checkpoint
      }
    }
    // Built completely before it is put in the map: no reader sees half a session.
    this.sessions.set(record.id, { record: JSON.stringify(record), lines: toLines(events), blobs, records: new Map() });
  }

  async getSession(id: string, options: SignalOption = {}): Promise<SessionRecord | undefined> {
    const session = this.find(id);
    options.signal?.throwIfAborted();
    return session && (JSON.parse(session.record) as SessionRecord);
  }

  async listSessionIds(options: SignalOption = {}): Promise<string[]> {
    options.signal?.throwIfAborted();
    return [...this.sessions.keys()];
  }

  async deleteSession(id: string, options: SignalOption = {}): Promise<boolean> {
    const found = this.find(id) !== undefined;
    options.signal?.throwIfAborted();
    return found && this.sessions.delete(id);
  }

  async lastEvent(id: string, options: SignalOption = {}): Promise<StoredEvent | undefined> {
    options.signal?.throwIfAborted();
    const last = this.existing(id).lines.at(-1);
    return last && (parseEventLine(last.text) as StoredEvent);
  }

  async *readEvents(id: string, options: ReadEventsOptions = {}): AsyncGenerator<StoredEvent> {
    const lines = this.existing(id).lines;
    const from = options.fromSequence ?? 0;
    const to = options.toSequence ?? Number.POSITIVE_INFINITY;
    for (const line of lines) {
      options.signal?.throwIfAborted();
      if (line.sequence < from) continue;
      if (line.sequence > to) return;
      yield parseEventLine(line.text) as StoredEvent;
    }
  }

  async readBlob(id: string, hash: string, options: BlobReadOptions = {}): Promise<Buffer | undefined> {
    const session = this.find(id);
    options.signal?.throwIfAborted();
    const bytes = session?.blobs.get(hash);
    const max = options.maxBytes === undefined ? undefined : options.maxBytes + 1;
    return bytes && Buffer.from(bytes.subarray(0, max));
  }

  async listBlobs(id: string, options: SignalOption = {}): Promise<string[]> {
    const session = this.find(id);
    options.signal?.throwIfAborted();
    return [...(session?.blobs.keys() ?? [])];
  }

  async readRecord(id: string, name: string, options: SignalOption = {}): Promise<unknown> {
    const session = this.find(id);
    options.signal?.throwIfAborted();
    if (!isRecordName(name)) return undefined;
    const text = session?.records.get(name);
    return text === undefined ? undefined : JSON.parse(text);
  }

  async listRecords(id: string, options: SignalOption = {}): Promise<string[]> {
    const session = this.find(id);
    options.signal?.throwIfAborted();
    return [...(session?.records.keys() ?? [])];
  }

  /** The bytes the session would take as files: log lines, blobs, records and its creation record. */
  async sizeOf(id: string, options: SignalOption = {}): Promise<number> {
    const session = this.find(id);
    options.signal?.throwIfAborted();
    if (!session) return 0;
    let total = Buffer.byteLength(session.record);
    for (const line of session.lines) total += Buffer.byteLength(line.text) + 1;
    for (const bytes of session.blobs.values()) total += bytes.length;
    for (const text of session.records.values()) total += Buffer.byteLength(text);
    return total;
  }

  async usage(id: string, options: SignalOption = {}): Promise<StorageUsage> {
    const session = this.find(id);
    options.signal?.throwIfAborted();
    if (!session) throw new SessionNotFoundError(id);
    let log = 0;
    for (const line of session.lines) log += Buffer.byteLength(line.text) + 1;
    let blobs = 0;
    for (const bytes of session.blobs.values()) blobs += bytes.length;
    let records = 0;
    for (const text of session.records.values()) records += Buffer.byteLength(text);
    const other = Buffer.byteLength(session.record);
    return { log, blobs, blobCount: session.blobs.size, records, other, total: log + blobs + records + other };
  }

  async lock(id: string, options: LockOptions = {}): Promise<LockedSession> {
    this.existing(id);
    const release = await this.locks.acquire(id, {
      waitMs: options.waitMs ?? this.defaultWaitMs,
      signal: options.signal,
    });
    // The session may have been deleted while we waited.
    const session = this.sessions.get(id);
    if (!session) {
      release();
      throw new SessionNotFoundError(id);
    }
    const locked: MemoryLockedSession = new MemoryLockedSession(
      id,
      session,
      () => {
        this.openLocks.delete(locked);
        release();
      },
      () => this.locks.hasWaiters(id),
    );
    this.openLocks.add(locked);
    return locked;
  }

  async close(): Promise<void> {
    const open = [...this.openLocks];
    this.openLocks.clear();
    await Promise.all(open.map((locked) => locked.release()));
  }

  /**
   * The session stored under `id`, if any: the one place an id is looked up in the map, so the id is checked here
   * (INVALID_SESSION_ID), as the fs backend checks it where it becomes a path (SessionLayout.dir).
   */
  private find(id: string): MemorySession | undefined {
    assertSessionId(id);
    return this.sessions.get(id);
  }

  private existing(id: string): MemorySession {
    const session = this.find(id);
    if (!session) throw new SessionNotFoundError(id);
    return session;
  }
}

async function collect(stream: AsyncIterable<StoredEvent>): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}
