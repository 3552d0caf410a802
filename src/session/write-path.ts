// How a store writes events: each input checked against its type's schema and built into its envelope, with
// its payload's JSON made now (outside the flush); the expected last sequence checked under the lock; and
// group commit, in which appends that arrive while a write is in flight share the next write
// (docs/ARCHITECTURE.md, "On disk").
import type { z } from "zod";
import type { AppendOptions, Durability, LockedSession } from "../backend/types.js";
import { EventTooLargeError, InvalidArgumentError, InvalidEventError, SequenceConflictError } from "../core/errors.js";
import { FORMAT_VERSION, type StoredEvent } from "../core/events.js";
import { lineBytesAtMost, rememberBuiltPayload } from "../core/envelope.js";
import { newId } from "../core/ids.js";
import { stableJsonSliced } from "../core/stable-json-sliced.js";
import { payloadAsStored } from "../core/payload-json.js";
import { rememberWellFormed } from "../core/payload-check.js";
import { parseRewindPayloadInSlices } from "../core/rewind-payload-sliced.js";
import type { SessionLease } from "./lease.js";

/** An event as a caller gives it: checked by {@link WritePath.toEvent} before anything is written. */
export type EventInputLike = { type: string; payload: unknown };

/** How a write goes: `groupCommit` lets an append share the next write with others queued. */
export interface WriteOptions {
  signal?: AbortSignal | undefined;
  groupCommit: boolean;
  expectedLastSequence?: number | undefined;
}

/** What the write path needs of its store. */
export interface WritePathConfig {
  // A Map, not an object: a type named "constructor" or "__proto__" must not find Object's members.
  schemas: ReadonlyMap<string, z.ZodType>;
  maxEventBytes: number;
  durability: Durability;
  /** The session's lease (lease.ts): the one way this store takes a session's lock. */
  lease: (id: string) => SessionLease;
}

/** An `append` waiting in the group-commit queue for the next write of its session. */
type QueuedAppend = {
  events: StoredEvent[];
  resolve: (events: StoredEvent[]) => void;
  reject: (error: unknown) => void;
};

/** The write path of one store: validation, the expected sequence, and its group-commit queues. */
export class WritePath {
  private readonly pending = new Map<string, QueuedAppend[]>();

  /** The options an append hands its backend, made once: they depend on the store's durability only. */
  private readonly appendOptions: { alone: AppendOptions; separately: AppendOptions };

  constructor(private readonly config: WritePathConfig) {
    const sync = config.durability !== "none";
    this.appendOptions = { alone: Object.freeze({ sync }), separately: Object.freeze({ sync, separately: true }) };
  }

  /** Validates `inputs`, then appends them: alone (under the lock, in order) or joining a group commit. */
  write(id: string, inputs: readonly EventInputLike[], options: WriteOptions): Promise<StoredEvent[]> {
    // Not async, as on the path of every append an async function returning a promise costs one more and two ticks:
    // what throws here rejects instead.
    try {
      return this.writeChecked(id, inputs, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private writeChecked(id: string, inputs: readonly EventInputLike[], options: WriteOptions): Promise<StoredEvent[]> {
    options.signal?.throwIfAborted();
    const events = this.toEvents(id, inputs);
    if (events.length === 0) return Promise.resolve([]);
    const expected = options.expectedLastSequence;
    if (expected !== undefined && (!Number.isSafeInteger(expected) || expected < 0))
      throw new InvalidArgumentError(
        `expectedLastSequence must be a non-negative integer, not ${JSON.stringify(expected)}.`,
      );
    if (options.groupCommit) return this.joinGroupCommit(id, events);
    return this.runInOrder(
      id,
      (locked) => {
        if (expected !== undefined && locked.lastSequence !== expected)
          throw new SequenceConflictError(id, expected, locked.lastSequence);
        return this.appendLocked(locked, events);
      },
      options.signal,
    );
  }

  /** Joins the session's open queue (or opens one): whoever runs next writes everything queued in one go. */
  private joinGroupCommit(id: string, events: StoredEvent[]): Promise<StoredEvent[]> {
    return new Promise<StoredEvent[]>((resolve, reject) => {
      let queue = this.pending.get(id);
      if (!queue) {
        queue = [];
        this.pending.set(id, queue);
        this.flushWhenLocked(id, queue);
      }
      queue.push({ events, resolve, reject });
    });
  }

  /** Writes `batch` once the lock is held, sealing it first: an append from then on opens the next batch. */
  private flushWhenLocked(id: string, batch: QueuedAppend[]): void {
    const seal = () => {
      if (this.pending.get(id) === batch) this.pending.delete(id);
    };
    this.config
      .lease(id)
      .run(async (locked) => {
        seal();
        try {
          // Separate appends sharing a write: each stands alone, so no batch mark ties them together.
          const written = await this.appendLocked(
            locked,
            batch.flatMap((p) => p.events),
            { separately: true },
          );
          let at = 0;
          for (const p of batch) {
            p.resolve(written.slice(at, at + p.events.length));
            at += p.events.length;
          }
        } catch (error) {
          for (const p of batch) p.reject(error);
        }
      })
      .catch((error: unknown) => {
        // The lock could not be taken: fail everything that was waiting for this write.
        seal();
        for (const p of batch) p.reject(error);
      });
  }

  /**
   * Queues locked work behind everything called before it. The open group-commit batch is
   * sealed first: an append called after this work must not join a batch written before it.
   */
  runInOrder<T>(
    id: string,
    fn: (locked: LockedSession) => Promise<T>,
    signal?: AbortSignal,
    detectReentry = false,
  ): Promise<T> {
    this.pending.delete(id);
    return this.config.lease(id).run(fn, signal, detectReentry);
  }

  /** Validates inputs and builds their envelopes, each payload serialized now, outside the flush. */
  toEvents(id: string, inputs: readonly EventInputLike[]): StoredEvent[] {
    // Loops, not map and forEach: no closure per call on the path of every append.
    const several = inputs.length > 1;
    const events: StoredEvent[] = [];
    for (let i = 0; i < inputs.length; i++) events.push(this.toEvent(id, inputs[i]!, several ? i : undefined));
    for (let i = 0; i < events.length; i++) {
      const bytes = lineBytesAtMost(events[i]!);
      if (bytes > this.config.maxEventBytes)
        throw new EventTooLargeError(events[i]!.type, bytes, this.config.maxEventBytes, several ? ` (event ${i})` : "");
    }
    return events;
  }

  /**
   * Appends events made by {@link toEvent} under a lock the caller holds, numbering them (in
   * place: no copy per event on the group-commit path) after the log's last sequence.
   */
  appendLocked(
    locked: LockedSession,
    events: StoredEvent[],
    options: { separately?: boolean } = {},
  ): Promise<StoredEvent[]> {
    try {
      const first = locked.lastSequence + 1;
      for (let i = 0; i < events.length; i++) events[i]!.sequence = first + i;
      const written = locked.append(
        events,
        options.separately ? this.appendOptions.separately : this.appendOptions.alone,
      );
      return written.then(() => events);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Checks one event input against its schema and builds its envelope (sequence 0 until written).
   * `final`: the payload is written as it is now, so its JSON is kept. The rewind fills in its
   * marker's payload after building it (intent.ts): for it the JSON is made when written.
   */
  toEvent(sessionId: string, input: EventInputLike, index?: number, final = true): StoredEvent {
    const where = index === undefined ? "" : ` (event ${index})`;
    const stored = payloadAsStored(this.validPayload(input, where), where);
    const event = envelopeOf(sessionId, input.type, stored.value);
    if (final) rememberBuiltPayload(event, stored.json);
    return event;
  }

  /**
   * {@link toEvent} for a rewind's marker, which the library builds and fills in later: checked against its schema
   * and read back from its sorted-key JSON as there, both in time slices (the library built the payload: plain
   * JSON data, nothing to refuse). Made in one go, a 1,000-file marker held the event loop 16-30 ms for its JSON
   * and 17 ms for its check (docs/ARCHITECTURE.md, "Batched file work"). The payload read back is marked well
   * formed, so the walks that act on it later do not check it again.
   */
  async markerEvent(sessionId: string, input: EventInputLike): Promise<StoredEvent> {
    const checked = input.type === "session_rewind" ? await parseRewindPayloadInSlices(input.payload) : undefined;
    const json = await stableJsonSliced(checked ?? this.validPayload(input, ""));
    const payload: unknown = JSON.parse(json ?? "null");
    rememberWellFormed(payload);
    return envelopeOf(sessionId, input.type, payload);
  }

  /**
   * The payload as its type's schema parses it, or INVALID_EVENT. The event will carry it as read back from
   * its JSON, not the caller's object: what append returns is what a later read gives (docs/ARCHITECTURE.md,
   * "Payloads are JSON").
   */
  private validPayload(input: EventInputLike, where: string): unknown {
    if (typeof input !== "object" || input === null || typeof input.type !== "string")
      throw new InvalidEventError(`An event needs a string "type" and a "payload"${where}.`);
    const schema = this.config.schemas.get(input.type);
    if (!schema)
      throw new InvalidEventError(
        `Unknown event type "${input.type}"${where}. ` +
          `Register it: new SessionStore({ events: { ${input.type}: z.object({…}) } }).`,
      );
    let parsed;
    try {
      parsed = schema.safeParse(input.payload);
    } catch (error) {
      // A schema reading a getter that throws, or a refinement that throws: the payload's fault, said
      // by its path where the JSON check finds it.
      payloadAsStored(input.payload, where);
      throw new InvalidEventError(`Invalid "${input.type}" payload${where}: checking it threw.`, [], { cause: error });
    }
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
      throw new InvalidEventError(
        `Invalid "${input.type}" payload${where}: ` +
          `${issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ")}.`,
        issues,
        { cause: parsed.error },
      );
    }
    return parsed.data;
  }
}

/** An event's envelope around its payload (sequence 0 until written). */
function envelopeOf(sessionId: string, type: string, payload: unknown): StoredEvent {
  return { v: FORMAT_VERSION, id: newId(), sessionId, sequence: 0, type, createdAt: isoNow(), payload };
}

let isoAtMs = Number.NaN;
let isoText = "";

/** `new Date().toISOString()`, made once per millisecond: appends made in a burst share the text. */
function isoNow(): string {
  const now = Date.now();
  if (now !== isoAtMs) {
    isoAtMs = now;
    isoText = new Date(now).toISOString();
  }
  return isoText;
}
