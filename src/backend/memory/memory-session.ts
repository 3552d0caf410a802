import { serializeEvent } from "../../core/envelope.js";
import { InvalidArgumentError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import { isBlobHash, isRecordName } from "../names.js";
import type { AppendOptions, LockedSession } from "../types.js";

/** One logged event, kept as the line the filesystem backend would write, so reads hand out fresh copies. */
export interface LoggedLine {
  sequence: number;
  text: string;
}

/** Everything one session holds in memory. */
export interface MemorySession {
  /** The creation record as JSON, so callers never share (and mutate) the stored object. */
  record: string;
  /** Replaced, never edited in place, on truncation: a reader part-way through keeps a consistent view. */
  lines: LoggedLine[];
  blobs: Map<string, Buffer>;
  records: Map<string, string>;
}

export function toLines(events: readonly StoredEvent[]): LoggedLine[] {
  return events.map((event) => ({ sequence: event.sequence, text: serializeEvent(event) }));
}

export function lastSequenceOf(session: MemorySession): number {
  return session.lines[session.lines.length - 1]?.sequence ?? 0;
}

export function assertBlobHash(hash: string): void {
  if (!isBlobHash(hash))
    throw new InvalidArgumentError(`"${hash}" is not a blob name: a blob is named by its lowercase hex sha256.`);
}

function assertRecordName(name: string): void {
  if (!isRecordName(name)) throw new InvalidArgumentError(`Invalid record name "${name}".`);
}

/** A memory session while its lock is held. */
export class MemoryLockedSession implements LockedSession {
  private released = false;

  constructor(
    readonly sessionId: string,
    private readonly session: MemorySession,
    private readonly releaseLock: () => void,
    private readonly waiting: () => boolean,
  ) {}

  get lastSequence(): number {
    return lastSequenceOf(this.session);
  }

  get held(): boolean {
    return !this.released;
  }

  async othersWaiting(): Promise<boolean> {
    return this.waiting();
  }

  assertHeld(): void {
    if (this.released) throw new InvalidArgumentError(`The lock on session "${this.sessionId}" was already released.`);
  }

  async append(events: readonly StoredEvent[], _options: AppendOptions = {}): Promise<void> {
    this.assertHeld();
    let previous = this.lastSequence;
    for (const event of events) {
      if (!Number.isSafeInteger(event.sequence) || event.sequence <= previous)
        throw new InvalidArgumentError(
          `Event sequence ${event.sequence} does not come after ${previous} in session "${this.sessionId}".`,
        );
      previous = event.sequence;
    }
    // Serialise everything before storing anything: all or nothing.
    const lines = toLines(events);
    this.session.lines.push(...lines);
  }

  async truncateAfter(sequence: number): Promise<void> {
    this.assertHeld();
    if (sequence >= this.lastSequence) return;
    this.session.lines = this.session.lines.filter((line) => line.sequence <= sequence);
  }

  async writeBlob(hash: string, bytes: Uint8Array): Promise<boolean> {
    this.assertHeld();
    assertBlobHash(hash);
    if (this.session.blobs.has(hash)) return false;
    this.session.blobs.set(hash, Buffer.from(bytes)); // a copy: the caller may reuse its buffer
    return true;
  }

  async hasBlob(hash: string): Promise<boolean> {
    return this.session.blobs.has(hash);
  }

  async deleteBlob(hash: string): Promise<void> {
    this.assertHeld();
    this.session.blobs.delete(hash);
  }

  async writeRecord(name: string, value: unknown, _options?: { durable?: boolean }): Promise<void> {
    this.assertHeld();
    assertRecordName(name);
    const text = JSON.stringify(value);
    if (text === undefined) throw new InvalidArgumentError(`Record "${name}" has no JSON form.`);
    this.session.records.set(name, text);
  }

  async deleteRecord(name: string): Promise<void> {
    this.assertHeld();
    assertRecordName(name);
    this.session.records.delete(name);
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.releaseLock();
  }
}
