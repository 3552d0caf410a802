// named-fs: a workspace's name may hold bytes that are not UTF-8 (docs/ARCHITECTURE.md, "Names and depths").
import { stat } from "../core/named-fs.js";
import { resolve as resolvePath } from "node:path";
import type { z } from "zod";
import { fsBackend } from "../backend/fs/fs-backend.js";
import type {
  CorruptLine,
  Durability,
  LockedSession,
  LockWait,
  SessionRecord,
  SignalOption,
  StorageBackend,
} from "../backend/types.js";
import {
  isAgentTapeError,
  InvalidArgumentError,
  InvalidEventError,
  SessionNotFoundError,
  SequenceConflictError,
  StoreClosedError,
  EventTooLargeError,
} from "../core/errors.js";
import {
  FORMAT_VERSION,
  builtinEvents,
  type BuiltinEvents,
  type EventInput,
  type ForkPayload,
  type EventSchemas,
  type StoredEvent,
  type TypedEvent,
} from "../core/events.js";
import { assertSessionId, newId } from "../core/ids.js";
import { pendingForReaders, recoverInterruptedWork, type PendingRewind } from "./recovery.js";
import { EventStream, inBatches } from "./event-stream.js";
import { lineBytesAtMost, rememberPayloadJson } from "../core/envelope.js";
import { payloadAsStored } from "../core/payload-json.js";
import { mapLimited } from "../core/bounded-concurrency.js";
import { clearBlobsInFlight } from "../blobs/in-flight.js";
import { addReferences } from "../blobs/references.js";
import { isDroppedCheckpoint, raiseHorizon, readHorizonMark } from "../blobs/retention-horizon.js";
import { SessionLease } from "./lease.js";
import { checkForkPointForm, resolveForkPoint } from "./sequence-on-tape.js";
import { foldConversation, type Conversation } from "./conversation.js";
import type { RetentionOutcome, RetentionPolicy } from "../core/retention-policy.js";
import { retentionOnOpen } from "./retention-on-open.js";
import { rehomed, type WorkspaceMove } from "./rehome.js";
import { definedFields, signalOf } from "../core/defined-fields.js";

export interface SessionStoreOptions<E extends EventSchemas = {}> {
  /** Folder holding one sub-folder per session (the filesystem backend). Needed unless `backend` is given. */
  root?: string;
  /** Where sessions are kept. @default fsBackend({ root }) */
  backend?: StorageBackend;
  /**
   * When a resolved `append` is safe:
   * - `"fsync"`: on stable storage; each append pays its own fsync (bench "durable append vs raw async fd").
   * - `"batch"`: on stable storage too, but appends that arrive while a write is in flight share
   *   the next write and fsync (group commit): many concurrent appenders are not capped at one
   *   fsync each.
   * - `"none"`: handed to the OS; survives a crash of this process, not a power loss.
   * @default "fsync"
   */
  durability?: Durability;
  /** Your own event types: `{ my_type: z.object(…) }`. `append` is typed by them. */
  events?: E;
  /**
   * The session lock is kept between operations and released after this long without any, so
   * another process (a CLI in a second terminal) can get it. 0 takes and releases the lock for
   * every operation, which costs more than the fsynced append itself (bench "lock per append vs lease").
   * @default 50
   */
  lockIdleMs?: number;
  /** Even when busy, the lock is handed over after being held this long. @default 1000 */
  lockMaxHoldMs?: number;
  /** How long an operation waits for another process's lock before LOCKED. @default 3 × lockStaleMs (15 s) */
  lockWaitMs?: number;
  /**
   * Told when an operation finds the session locked by another process, then about once a second while it
   * waits: the holder's pid and whether it still runs, and the time until its lock goes stale (a dead
   * holder's lock is taken over then). Must not throw. The CLI prints it on stderr.
   */
  onLockWait?: (wait: LockWait) => void;
  /** For the default backend: a lock not refreshed for this long (its holder crashed) is taken over. @default 5000 */
  lockStaleMs?: number;
  /**
   * The largest event `append`, `appendMany` and `withLock` accept, in bytes of its line in the log;
   * a larger one is EVENT_TOO_LARGE and nothing is written. Reading costs the same per byte at any
   * size, but a line is one JSON value: it is held whole in memory while it is parsed (bytes, then a
   * string: V8 stops at 512 MiB), and a read from a sequence searches backwards only through lines up
   * to 16 MiB (a longer one sends it through the log from the start). Keep large content in a blob
   * or a file and append a reference. Events the library writes itself (checkpoints, rewind markers)
   * and reading are not limited: a store with a lower limit reads what one with a higher limit wrote.
   * @default 16 MiB (16 * 1024 * 1024)
   */
  maxEventBytes?: number;
  /**
   * A retention policy applied once as the store opens, in the background (docs/ARCHITECTURE.md,
   * "Retention"): what `applyRetention(store, policy)` does, never to a session whose lock a live process
   * holds. {@link SessionStore.retention} tells what it did; `close()` waits for it. Costs a listing of
   * every session (and a lock probe per session it deletes) at each open: set it on a store opened once
   * per process, not per request. @default none
   */
  retention?: RetentionPolicy;
}

/** `maxEventBytes` unless set: the longest line the backward seek (src/backend/fs/seek.ts) goes through. */
export const DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024;

export type { PendingRewind } from "./recovery.js";

/** What a session is, derived from its log and its creation record. */
export interface SessionInfo {
  id: string;
  title?: string;
  workspace?: string;
  createdAt: string;
  /** Time of the last event, or `createdAt` when there is none. */
  updatedAt: string;
  /** Highest sequence in the log; 0 when empty. */
  lastSequence: number;
  /** Set on a fork. */
  parent?: { id: string; atSequence: number };
  /**
   * Set by `list()` on a session whose log could not be read (e.g. LOG_CORRUPT): it is listed
   * rather than hidden, with `lastSequence` 0 and `updatedAt` = `createdAt`.
   */
  unreadable?: { code: string; message: string };
  /**
   * Set while a rewind (or an undo) of this session is not finished: running in another process or
   * interrupted by a crash (`state: "interrupted"`, the next writer finishes it), or failed and not rolled
   * back (`"failed"`, e.g. a file the OS will not let it write: the next writer rolls it back once the cause
   * is fixed, and gets REWIND_FAILED until then). Readers never finish it, roll it back or fail because of
   * it: they read the tape as it is on disk (docs/ARCHITECTURE.md, "Recovery").
   */
  pendingRewind?: PendingRewind;
}

export interface CreateOptions extends SignalOption {
  /** Your id (1-128 of A-Z a-z 0-9 . _ -); a time-sortable one is generated if omitted. */
  id?: string;
  title?: string;
  /** Folder the agent edits; checkpoints and rewinds default to it. Stored as an absolute path. */
  workspace?: string;
}

export interface ReadOptions<T extends string = string> extends SignalOption {
  fromSequence?: number;
  toSequence?: number;
  types?: readonly T[];
}

export interface StoreAppendOptions extends SignalOption {
  /**
   * Append only if the tape's last sequence is still this one (the last event you read, or
   * {@link SessionStore.head}); otherwise SEQUENCE_CONFLICT with the current one, and nothing is
   * written. Such an append skips group commit: it pays its own write.
   */
  expectedLastSequence?: number;
}

export interface WithLockOptions extends SignalOption {
  /**
   * Refuse (INVALID_ARGUMENT) a call into this store for the same session from inside `fn`,
   * which would otherwise wait for itself forever. Costs: on Node 20 it turns on promise hooks
   * for the whole process (slower promises everywhere). Library code that never re-enters passes
   * false. @default true
   */
  detectReentry?: boolean;
}

export interface ForkOptions extends SignalOption {
  /** Last event of the parent to keep. @default the parent's last sequence */
  atSequence?: number;
  /**
   * Or: keep the parent's events up to just before this tool call (its latest `tool_call`, else its first
   * checkpoint), as `rewind({ beforeCallId })` finds it. Give at most one of the two.
   */
  beforeCallId?: string;
  id?: string;
  title?: string;
}

/**
 * The event types a store of `E` knows, and a selection of them. Methods name the selection as a type parameter
 * `T` (inferred, or every type by default) so that a store with more types is assignable to one with fewer: a
 * `SessionStore<{ plan }>` passes where a `SessionStore` is expected (test/session/store-types.test.ts).
 */
type Known<E extends EventSchemas> = BuiltinEvents & E;
type KnownType<E extends EventSchemas> = keyof Known<E> & string;

export interface SalvageResult<E extends EventSchemas, T extends KnownType<E> = KnownType<E>> {
  events: TypedEvent<Pick<Known<E>, T>>[];
  corrupt: CorruptLine[];
}

/** Sessions `list()` reads at once: enough to hide each one's latency, few enough for any open-file limit. */
const LIST_CONCURRENCY = 16;

/** An `append` waiting in the group-commit queue for the next write of its session. */
type QueuedAppend = {
  events: StoredEvent[];
  resolve: (events: StoredEvent[]) => void;
  reject: (error: unknown) => void;
};

/**
 * The session while you hold its lock (see {@link SessionStore.withLock}): what you read is
 * current, and what you append lands right after it. Appends are validated like
 * {@link SessionStore.append}; nothing here can cut the log, delete blobs or write side records. It
 * appends only while the function given to `withLock` runs: kept past it, `append` throws INVALID_ARGUMENT.
 */
export interface HeldSession<E extends EventSchemas = {}> {
  readonly sessionId: string;
  /** Highest sequence in the log (0 when empty); exact, since nobody else can write now. */
  readonly lastSequence: number;
  /**
   * Validates the event and appends it with the next sequence; durable per the store's
   * `durability` when it resolves. Throws INVALID_EVENT (nothing written), LOCK_COMPROMISED.
   */
  append<T extends KnownType<E>>(event: EventInput<Pick<Known<E>, T>>): Promise<TypedEvent<Pick<Known<E>, T>>>;
  /**
   * Appends several events with contiguous sequences, all or nothing, in one write: also across a crash
   * mid-write, after which readers never see part of the batch and the next writer cuts it
   * (docs/ARCHITECTURE.md, "On disk").
   */
  appendMany<T extends KnownType<E>>(
    events: readonly EventInput<Pick<Known<E>, T>>[],
  ): Promise<TypedEvent<Pick<Known<E>, T>>[]>;
}

/** How {@link SessionStore} writes: `groupCommit` lets an append share the next write with others queued. */
interface WriteOptions extends SignalOption {
  groupCommit: boolean;
  expectedLastSequence?: number;
}

/** The raw-lock operations of a store, for the package's own layers only (see the functions below the class). */
interface LockedAccess {
  toEvent(store: SessionStore<any>, sessionId: string, input: { type: string; payload: unknown }): StoredEvent;
  appendLocked(store: SessionStore<any>, locked: LockedSession, events: StoredEvent[]): Promise<StoredEvent[]>;
  withLockedSession<T>(
    store: SessionStore<any>,
    id: string,
    fn: (locked: LockedSession) => Promise<T>,
    options: WithLockOptions,
  ): Promise<T>;
  forkLocked(
    store: SessionStore<any>,
    locked: LockedSession,
    options: ForkOptions,
    move: WorkspaceMove,
  ): Promise<SessionInfo>;
}
let lockedAccess!: LockedAccess;

/**
 * A durable, typed, append-only log of agent sessions. Safe to share between processes: every
 * write happens under the session's lock, so no event is lost, duplicated or interleaved.
 * Reads take no lock. `close()` (or `await using`) releases every lock.
 */
export class SessionStore<E extends EventSchemas = {}> {
  /** The storage backend. Advanced use: the conformance suite, custom tooling. */
  readonly backend: StorageBackend;
  readonly durability: Durability;
  /** The largest event line appends accept (see {@link SessionStoreOptions.maxEventBytes}). */
  readonly maxEventBytes: number;
  // A Map, not an object: a type named "constructor" or "__proto__" must not find Object's members.
  private readonly schemas: ReadonlyMap<string, z.ZodType>;
  private readonly leases = new Map<string, SessionLease>();
  private readonly pending = new Map<string, QueuedAppend[]>();
  private readonly lockIdleMs: number;
  private readonly lockMaxHoldMs: number;
  private readonly lockWaitMs: number | undefined;
  private readonly onLockWait: ((wait: LockWait) => void) | undefined;
  private closed = false;
  private readonly ownsBackend: boolean;
  /**
   * What `retention` (the option) did as the store opened: the report, or undefined without the option.
   * Rejects with what stopped it (an invalid policy: INVALID_ARGUMENT); not awaiting it is safe.
   */
  readonly retention: Promise<RetentionOutcome | undefined>;

  constructor(options: SessionStoreOptions<E>) {
    // A backend passed in may be shared with other stores: close() leaves it open for them.
    this.ownsBackend = options.backend === undefined;
    if (options.backend) this.backend = options.backend;
    else if (options.root)
      this.backend = fsBackend(
        options.lockStaleMs === undefined
          ? { root: options.root }
          : { root: options.root, lockStaleMs: options.lockStaleMs },
      );
    else throw new InvalidArgumentError("SessionStore needs a `root` folder (or a `backend`).");
    this.durability = options.durability ?? "fsync";
    if (!["fsync", "batch", "none"].includes(this.durability))
      throw new InvalidArgumentError(
        `durability must be "fsync", "batch" or "none", not ${JSON.stringify(this.durability)}.`,
      );
    this.schemas = new Map(Object.entries({ ...(options.events ?? {}), ...builtinEvents }));
    for (const type of Object.keys(options.events ?? {})) {
      if (Object.hasOwn(builtinEvents, type))
        throw new InvalidArgumentError(`Event type "${type}" is built in; register yours under another name.`);
    }
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    if (!Number.isSafeInteger(this.maxEventBytes) || this.maxEventBytes < 1)
      throw new InvalidArgumentError(
        `maxEventBytes must be a positive whole number of bytes, not ${JSON.stringify(options.maxEventBytes)}.`,
      );
    this.lockIdleMs = options.lockIdleMs ?? 50;
    this.lockMaxHoldMs = options.lockMaxHoldMs ?? 1000;
    this.lockWaitMs = options.lockWaitMs;
    this.onLockWait = options.onLockWait;
    this.retention = options.retention ? this.applyRetentionOnOpen(options.retention) : Promise.resolve(undefined);
    this.retention.catch(() => undefined); // a rejection nobody awaits must not crash the process
  }

  /** Once per open: after the constructor returns, so the store is whole when the policy uses it. */
  private async applyRetentionOnOpen(policy: RetentionPolicy): Promise<RetentionOutcome> {
    await Promise.resolve();
    const apply = retentionOnOpen();
    if (!apply)
      throw new InvalidArgumentError("`retention` needs agent-tape's maintenance layer: import the package's entry.");
    return apply(this, policy);
  }

  // ---- sessions --------------------------------------------------------------------------

  /** Creates an empty session. Throws SESSION_EXISTS if `id` is taken, INVALID_SESSION_ID if unsafe. */
  async create(options: CreateOptions = {}): Promise<SessionInfo> {
    this.assertOpen();
    const id = options.id ?? newId();
    assertSessionId(id);
    const record: SessionRecord = { id, createdAt: new Date().toISOString() };
    if (options.title !== undefined) record.title = options.title;
    if (options.workspace !== undefined) record.workspace = await existingFolder(options.workspace);
    await this.backend.createSession(record, [], signalOf(options));
    return toInfo(record, undefined);
  }

  /**
   * The tape's last sequence now (0 when empty): cheap (the last event only). A long-lived process
   * compares it with the last one it saw to learn that another process appended or rewound, and
   * passes it as `expectedLastSequence` to append only if nothing moved. Throws SESSION_NOT_FOUND.
   */
  async head(id: string, options: SignalOption = {}): Promise<number> {
    this.assertOpen();
    assertSessionId(id);
    if (!(await this.backend.getSession(id, options))) throw new SessionNotFoundError(id);
    await this.pendingWork(id, options); // a tampered intent is STORE_TAMPERED for readers too
    return (await this.backend.lastEvent(id, options))?.sequence ?? 0;
  }

  /**
   * Whether this store validates events of `type` (a built-in one, or one of `events`): what an adapter checks
   * when it is given a store, so that a store opened without its event set is refused at once, by name.
   */
  knowsEventType(type: string): boolean {
    return this.schemas.has(type);
  }

  /** The session's info, or undefined if there is none. */
  async get(id: string, options: SignalOption = {}): Promise<SessionInfo | undefined> {
    this.assertOpen();
    const record = await this.backend.getSession(id, options);
    if (!record) return undefined;
    const pending = await this.pendingWork(id, options);
    const info = toInfo(record, await this.backend.lastEvent(id, options));
    if (pending) info.pendingRewind = pending;
    return info;
  }

  /**
   * Work left pending in the session (a rewind's intent record), as readers report it: read, never acted on.
   * Readers take no lock for it and change nothing (docs/ARCHITECTURE.md, "Recovery"). One directory read
   * when there is nothing pending.
   */
  private async pendingWork(id: string, options: SignalOption): Promise<PendingRewind | undefined> {
    const records = await this.backend.listRecords(id, options);
    if (records.length === 0) return undefined;
    return pendingForReaders(this.backend, id, records, signalOf(options));
  }

  /**
   * Every session, most recently updated first. Reads each session's record and last event only
   * (not its log), a few sessions at a time: thousands of sessions never exhaust open files.
   */
  async list(options: SignalOption = {}): Promise<SessionInfo[]> {
    this.assertOpen();
    const ids = await this.backend.listSessionIds(options);
    const infos = await mapLimited(ids, LIST_CONCURRENCY, (id) => this.infoForList(id, options));
    return infos
      .filter((info): info is SessionInfo => info !== undefined)
      .sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : a.id < b.id ? 1 : -1));
  }

  private async infoForList(id: string, options: SignalOption): Promise<SessionInfo | undefined> {
    try {
      return await this.get(id, options);
    } catch (error) {
      if (isAgentTapeError(error, "SESSION_NOT_FOUND") || isAgentTapeError(error, "INVALID_SESSION_ID"))
        return undefined; // gone meanwhile, or not a session folder
      // Whatever part is damaged (the log, or session.json itself), still name the session.
      const record = (await this.backend.getSession(id, options).catch(() => undefined)) ?? {
        id,
        createdAt: new Date(0).toISOString(),
      };
      const code = isAgentTapeError(error)
        ? error.code
        : ((error as NodeJS.ErrnoException).code ?? error?.constructor?.name ?? "UNKNOWN");
      return { ...toInfo(record, undefined), unreadable: { code, message: (error as Error).message } };
    }
  }

  /** Deletes the session, its log and blobs, once no other writer holds it. Returns false if there was none. */
  async delete(id: string, options: SignalOption = {}): Promise<boolean> {
    this.assertOpen();
    assertSessionId(id);
    if (!(await this.backend.getSession(id, options))) return false;
    const deleted = await this.runInOrder(
      id,
      async (locked) => {
        const done = await this.backend.deleteSession(id, options);
        await locked.release();
        return done;
      },
      options.signal,
    );
    this.leases.delete(id);
    return deleted;
  }

  // ---- writing ---------------------------------------------------------------------------

  /**
   * Validates the event against its type's schema and appends it with the next sequence.
   * Resolves once durable (per `durability`). Throws INVALID_EVENT (nothing written),
   * SESSION_NOT_FOUND, LOCKED, STORE_CLOSED.
   */
  async append<T extends KnownType<E>>(
    id: string,
    event: EventInput<Pick<Known<E>, T>>,
    options: StoreAppendOptions = {},
  ): Promise<TypedEvent<Pick<Known<E>, T>>> {
    const [stored] = await this.write(id, [event], {
      ...signalOf(options),
      ...expectation(options),
      groupCommit: this.durability !== "fsync" && options.expectedLastSequence === undefined,
    });
    return stored as TypedEvent<Pick<Known<E>, T>>;
  }

  /**
   * Appends several events with contiguous sequences, all or nothing, in one write: also across a crash
   * mid-write, after which readers never see part of the batch and the next writer cuts it
   * (docs/ARCHITECTURE.md, "On disk").
   */
  async appendMany<T extends KnownType<E>>(
    id: string,
    events: readonly EventInput<Pick<Known<E>, T>>[],
    options: StoreAppendOptions = {},
  ): Promise<TypedEvent<Pick<Known<E>, T>>[]> {
    const write = { ...signalOf(options), ...expectation(options), groupCommit: false };
    return (await this.write(id, events, write)) as TypedEvent<Pick<Known<E>, T>>[];
  }

  private async write(
    id: string,
    inputs: readonly { type: string; payload: unknown }[],
    options: WriteOptions,
  ): Promise<StoredEvent[]> {
    this.assertOpen();
    assertSessionId(id);
    options.signal?.throwIfAborted();
    const events = this.#toEvents(id, inputs);
    if (events.length === 0) return [];
    const expected = options.expectedLastSequence;
    if (expected !== undefined && (!Number.isSafeInteger(expected) || expected < 0))
      throw new InvalidArgumentError(
        `expectedLastSequence must be a non-negative integer, not ${JSON.stringify(expected)}.`,
      );
    if (!options.groupCommit) {
      return this.runInOrder(
        id,
        (locked) => {
          if (expected !== undefined && locked.lastSequence !== expected)
            throw new SequenceConflictError(id, expected, locked.lastSequence);
          return this.#appendLocked(locked, events);
        },
        options.signal,
      );
    }
    // Group commit: join the queue; whoever runs next writes everything queued in one go.
    return new Promise<StoredEvent[]>((resolve, reject) => {
      let queue = this.pending.get(id);
      if (!queue) {
        const batch: QueuedAppend[] = [];
        queue = batch;
        this.pending.set(id, batch);
        const seal = () => {
          if (this.pending.get(id) === batch) this.pending.delete(id);
        };
        this.lease(id)
          .run(async (locked) => {
            seal();
            try {
              // Separate appends sharing a write: each stands alone, so no batch mark ties them together.
              const written = await this.#appendLocked(
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
      queue.push({ events, resolve, reject });
    });
  }

  /** Validates inputs and builds their envelopes, each payload serialized now, outside the flush. */
  #toEvents(id: string, inputs: readonly { type: string; payload: unknown }[]): StoredEvent[] {
    const events = inputs.map((input, i) => this.#toEvent(id, input, inputs.length > 1 ? i : undefined));
    events.forEach((event, i) => {
      const bytes = lineBytesAtMost(event);
      if (bytes > this.maxEventBytes)
        throw new EventTooLargeError(event.type, bytes, this.maxEventBytes, inputs.length > 1 ? ` (event ${i})` : "");
    });
    return events;
  }

  /**
   * Appends events made by {@link #toEvent} under a lock the caller holds, numbering them (in
   * place: no copy per event on the group-commit path) after the log's last sequence.
   */
  async #appendLocked(
    locked: LockedSession,
    events: StoredEvent[],
    options: { separately?: boolean } = {},
  ): Promise<StoredEvent[]> {
    events.forEach((event, i) => {
      event.sequence = locked.lastSequence + 1 + i;
    });
    await locked.append(events, { sync: this.durability !== "none", ...options });
    return events;
  }

  /**
   * Checks one event input against its schema and builds its envelope (sequence 0 until written).
   * `final`: the payload is written as it is now, so its JSON is kept. The rewind fills in its
   * marker's payload after building it (intent.ts): for it the JSON is made when written.
   */
  #toEvent(sessionId: string, input: { type: string; payload: unknown }, index?: number, final = true): StoredEvent {
    const where = index === undefined ? "" : ` (event ${index})`;
    if (typeof input !== "object" || input === null || typeof input.type !== "string")
      throw new InvalidEventError(`An event needs a string "type" and a "payload"${where}.`);
    const schema = this.schemas.get(input.type);
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
    // The event carries the payload as read back from its JSON, not the caller's object: what append
    // returns is what a later read gives (docs/ARCHITECTURE.md, "Payloads are JSON").
    const stored = payloadAsStored(parsed.data, where);
    const event: StoredEvent = {
      v: FORMAT_VERSION,
      id: newId(),
      sessionId,
      sequence: 0,
      type: input.type,
      createdAt: new Date().toISOString(),
      payload: stored.value,
    };
    if (final) rememberPayloadJson(event, stored.json);
    return event;
  }

  /**
   * Runs `fn` holding the session's lock (after this store's queued writes), so what it reads
   * stays current until it returns: e.g. append only if the last event is still the one you saw.
   * `fn` gets a {@link HeldSession}, which appends (validated) and nothing else, until `fn` settles (an
   * append `fn` started is waited for before the lock goes on; one after it is refused). Calling this
   * store's methods for the same session from inside `fn` is refused (the lock is not
   * re-entrant). Throws SESSION_NOT_FOUND, LOCKED, STORE_CLOSED, and whatever `fn` throws.
   */
  withLock<R, T extends KnownType<E> = KnownType<E>>(
    id: string,
    fn: (session: HeldSession<Pick<Known<E>, T>>) => Promise<R>,
    options: WithLockOptions = {},
  ): Promise<R> {
    return this.#withLockedSession(
      id,
      async (locked) => {
        const held = this.#held(locked);
        try {
          return await fn(held.session as HeldSession<any>);
        } finally {
          await held.end();
        }
      },
      options,
    );
  }

  #withLockedSession<T>(id: string, fn: (locked: LockedSession) => Promise<T>, options: WithLockOptions): Promise<T> {
    this.assertOpen();
    assertSessionId(id);
    return this.runInOrder(id, fn, options.signal, options.detectReentry ?? true);
  }

  /**
   * The user's view of a held lock: validated appends only, and only while `fn` runs. `end` (once `fn` has
   * settled) refuses every later call and waits for the appends still running, so a handle kept past
   * `withLock` or an append left unawaited never writes while the lock serves another caller.
   */
  #held(locked: LockedSession): { session: HeldSession<E>; end: () => Promise<void> } {
    let ended = false;
    const running = new Set<Promise<unknown>>();
    const appendMany = async (inputs: readonly { type: string; payload: unknown }[]): Promise<any[]> => {
      if (ended)
        throw new InvalidArgumentError(
          `This held session of "${locked.sessionId}" ended when its withLock returned: ` +
            "append inside the function given to withLock, or call withLock again.",
        );
      const events = this.#toEvents(locked.sessionId, inputs as readonly EventInput<Known<E>>[]);
      if (events.length === 0) return [];
      const appended = this.#appendLocked(locked, events);
      running.add(appended);
      try {
        return await appended;
      } finally {
        running.delete(appended);
      }
    };
    const session: HeldSession<E> = {
      sessionId: locked.sessionId,
      get lastSequence() {
        return locked.lastSequence;
      },
      append: async (input: { type: string; payload: unknown }) => (await appendMany([input]))[0]!,
      appendMany,
    };
    const end = async () => {
      ended = true;
      await Promise.allSettled([...running]);
    };
    return { session, end };
  }

  static {
    lockedAccess = {
      toEvent: (store, sessionId, input) => store.#toEvent(sessionId, input, undefined, false),
      appendLocked: (store, locked, events) => store.#appendLocked(locked, events),
      withLockedSession: (store, id, fn, options) => store.#withLockedSession(id, fn, options),
      forkLocked: (store, locked, options, move) => store.#forkLocked(locked, options, move),
    };
  }

  /**
   * Queues locked work behind everything called before it. The open group-commit batch is
   * sealed first: an append called after this work must not join a batch written before it.
   */
  private runInOrder<T>(
    id: string,
    fn: (locked: LockedSession) => Promise<T>,
    signal?: AbortSignal,
    detectReentry = false,
  ): Promise<T> {
    this.pending.delete(id);
    return this.lease(id).run(fn, signal, detectReentry);
  }

  // ---- reading ---------------------------------------------------------------------------

  /**
   * Streams the session's events in sequence order with flat memory. Breaking out of the loop
   * closes the file. A torn last line is skipped; a corrupt line throws LOG_CORRUPT naming the
   * file and line (see {@link salvage}). Events of types this store does not know are yielded
   * as they are.
   */
  read<T extends keyof (BuiltinEvents & E) & string>(
    id: string,
    options: ReadOptions<T> = {},
  ): AsyncIterableIterator<TypedEvent<Pick<BuiltinEvents & E, T>>> {
    const types = options.types ? new Set<string>(options.types) : undefined;
    const range = definedFields({
      fromSequence: options.fromSequence,
      toSequence: options.toSequence,
      signal: options.signal,
    });
    return new EventStream<TypedEvent<Pick<BuiltinEvents & E, T>>>(
      async () => {
        this.assertOpen();
        assertSessionId(id);
        assertSequenceBound("fromSequence", options.fromSequence);
        assertSequenceBound("toSequence", options.toSequence);
        await this.pendingWork(id, options); // a tampered intent is STORE_TAMPERED for readers too
        return this.backend.readEventBatches?.(id, range) ?? inBatches(this.backend.readEvents(id, range));
      },
      types && ((event) => types.has(event.type)),
    );
  }

  /** Every event of the session, in order. For long logs prefer {@link read} or {@link fold}. */
  async readAll<T extends KnownType<E> = KnownType<E>>(
    id: string,
    options: ReadOptions<T> = {},
  ): Promise<TypedEvent<Pick<Known<E>, T>>[]> {
    const events: TypedEvent<Pick<Known<E>, T>>[] = [];
    for await (const event of this.read(id, options)) events.push(event);
    return events;
  }

  /** Reads whatever can be read: corrupt lines are skipped and reported instead of failing. */
  async salvage<T extends KnownType<E> = KnownType<E>>(
    id: string,
    options: SignalOption = {},
  ): Promise<SalvageResult<E, T>> {
    this.assertOpen();
    const corrupt: CorruptLine[] = [];
    const events: TypedEvent<Pick<Known<E>, T>>[] = [];
    const source = this.backend.readEvents(id, { ...options, onCorrupt: (bad) => corrupt.push(bad) });
    for await (const event of source) events.push(event as unknown as TypedEvent<Pick<Known<E>, T>>);
    return { events, corrupt };
  }

  /** Resume: folds the session's events, in order, into a state. Streams; memory is your state's. */
  async fold<S, T extends KnownType<E> = KnownType<E>>(
    id: string,
    reducer: (state: S, event: TypedEvent<Pick<Known<E>, T>>) => S,
    initial: S,
    options: ReadOptions<T> = {},
  ): Promise<S> {
    let state = initial;
    for await (const event of this.read(id, options)) state = reducer(state, event);
    return state;
  }

  /** The conversation as an agent needs it to continue: messages, each with its tool calls and results. */
  async conversation(id: string, options: SignalOption = {}): Promise<Conversation> {
    return this.fold(id, foldConversation, { messages: [], lastSequence: 0 } as Conversation, options);
  }

  // ---- forks -----------------------------------------------------------------------------

  /**
   * A new session holding the parent's events through `atSequence` (or up to just before the tool call
   * `beforeCallId`; same sequences), then a `session_fork` event naming the parent, plus the blobs the
   * copied checkpoints need. A point no longer on the tape is SEQUENCE_NOT_ON_TAPE, naming its neighbours.
   */
  async fork(parentId: string, options: ForkOptions = {}): Promise<SessionInfo> {
    this.assertOpen();
    assertSessionId(parentId);
    const id = options.id ?? newId();
    assertSessionId(id);
    checkForkPointForm(options);
    if (!(await this.backend.getSession(parentId, options))) throw new SessionNotFoundError(parentId);
    // Under the parent's lock, so no rewind can prune a blob between reading and linking it.
    return this.runInOrder(parentId, (locked) => this.#forkLocked(locked, { ...options, id }), options.signal);
  }

  /** {@link fork} with the parent's lock held; `move` re-homes the copied events into the fork's own folder. */
  async #forkLocked(locked: LockedSession, options: ForkOptions, move?: WorkspaceMove): Promise<SessionInfo> {
    const parentId = locked.sessionId;
    const id = options.id ?? newId();
    assertSessionId(id);
    const parent = await this.backend.getSession(parentId, signalOf(options));
    if (!parent) throw new SessionNotFoundError(parentId);
    const at = await resolveForkPoint(this.backend, parentId, options, locked.lastSequence, signalOf(options));
    // Streamed from the parent's log into the new one: memory does not follow the log's length.
    // The blobs the copied checkpoints point at are collected on the way, for the backend to link.
    const hashes = new Set<string>();
    const forkPayload: ForkPayload = { parentId, atSequence: at };
    if (move) forkPayload.workspace = move.to;
    const forkEvent = this.#toEvent(id, { type: "session_fork", payload: forkPayload });
    const backend = this.backend;
    const horizon = await readHorizonMark(backend, parentId, options);
    let last = 0;
    async function* copied(): AsyncGenerator<StoredEvent> {
      for await (const event of backend.readEvents(parentId, { toSequence: at, ...signalOf(options) })) {
        if (!isDroppedCheckpoint(event, horizon)) addReferences(event, hashes);
        last = event.sequence;
        const copy = { ...event, sessionId: id };
        yield move ? rehomed(copy, move) : copy;
      }
      forkEvent.sequence = last + 1;
      yield forkEvent;
    }
    const record: SessionRecord = {
      id,
      createdAt: new Date().toISOString(),
      parent: { id: parentId, atSequence: at },
    };
    const title = options.title ?? parent.title;
    if (title !== undefined) record.title = title;
    const workspace = move ? move.to : parent.workspace;
    if (workspace !== undefined) record.workspace = workspace;
    await this.backend.createSession(record, copied(), {
      ...signalOf(options),
      blobsFrom: { sessionId: parentId, hashes },
    });
    // The copied checkpoints retention dropped came without blobs: the fork inherits the horizon,
    // capped at its copied prefix so its own new checkpoints stay whole.
    if (horizon.through > 0 && last > 0) {
      const child = await this.backend.lock(id, signalOf(options));
      try {
        await raiseHorizon(child, 0, Math.min(horizon.through, last), horizon.throughId);
      } finally {
        await child.release();
      }
    }
    return toInfo(record, forkEvent);
  }

  // ---- lifecycle -------------------------------------------------------------------------

  /**
   * Waits for queued writes, releases every lock this store holds, and closes the backend if the
   * store made it (from `root`); a backend passed in is left open for its other users.
   * Idempotent; later calls get STORE_CLOSED.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.retention.catch(() => undefined); // it uses the store: let it finish first
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.leases.values()].map((lease) => lease.close()));
    this.leases.clear();
    if (this.ownsBackend) await this.backend.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreClosedError();
  }

  private lease(id: string): SessionLease {
    let lease = this.leases.get(id);
    if (!lease) {
      lease = new SessionLease(this.backend, id, {
        idleMs: this.lockIdleMs,
        maxHoldMs: this.lockMaxHoldMs,
        waitMs: this.lockWaitMs,
        onWait: this.onLockWait,
        onAcquired: (locked) => recoverInterruptedWork(this.backend, locked),
        beforeRelease: clearBlobsInFlight,
      });
      this.leases.set(id, lease);
    }
    return lease;
  }
}

// ---- package-internal: the layers above (checkpoint, rewind, maintenance) write under the raw lock.
// Not exported by src/index.ts, so a user of `agent-tape` cannot reach them.

/** Checks an event against the store's schemas and builds its envelope (sequence 0 until appended). */
export function eventFor(
  store: SessionStore<any>,
  sessionId: string,
  input: { type: string; payload: unknown },
): StoredEvent {
  return lockedAccess.toEvent(store, sessionId, input);
}

/** Appends events made by {@link eventFor} under a held lock, numbered after its last sequence (in place). */
export function appendUnderLock(
  store: SessionStore<any>,
  locked: LockedSession,
  events: StoredEvent[],
): Promise<StoredEvent[]> {
  return lockedAccess.appendLocked(store, locked, events);
}

/**
 * Like {@link SessionStore.withLock}, but `fn` gets the backend's raw {@link LockedSession}: it can
 * truncate, write blobs and records. For checkpoint, rewind, undo and gc only.
 */
export function withLockedSession<T>(
  store: SessionStore<any>,
  id: string,
  fn: (locked: LockedSession) => Promise<T>,
  options: WithLockOptions = {},
): Promise<T> {
  return lockedAccess.withLockedSession(store, id, fn, options);
}

/**
 * {@link SessionStore.fork} of the session whose lock `locked` holds, into its own folder: the fork records
 * `move.to` as its workspace and re-homes the copied events there (src/session/rehome.ts). For the rewind
 * layer's `forkIntoWorkspace`, which has filled that folder first.
 */
export function forkUnderLock(
  store: SessionStore<any>,
  locked: LockedSession,
  options: ForkOptions,
  move: WorkspaceMove,
): Promise<SessionInfo> {
  return lockedAccess.forkLocked(store, locked, options, move);
}

/** The workspace as an absolute path, or INVALID_ARGUMENT when it is missing or not a folder. */
async function existingFolder(workspace: string): Promise<string> {
  if (typeof workspace !== "string" || workspace === "")
    throw new InvalidArgumentError(`workspace must be a folder's path, not ${JSON.stringify(workspace)}.`);
  const path = resolvePath(workspace);
  const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
    throw new InvalidArgumentError(
      `workspace ${path} cannot be used (${error.code ?? error.message}): create it first.`,
      {
        cause: error,
      },
    );
  });
  if (!info.isDirectory()) throw new InvalidArgumentError(`workspace ${path} is not a folder.`);
  return path;
}

function toInfo(record: SessionRecord, last: StoredEvent | undefined): SessionInfo {
  const info: SessionInfo = {
    id: record.id,
    createdAt: record.createdAt,
    updatedAt: last?.createdAt ?? record.createdAt,
    lastSequence: last?.sequence ?? 0,
  };
  if (record.title !== undefined) info.title = record.title;
  if (record.workspace !== undefined) info.workspace = record.workspace;
  if (record.parent !== undefined) info.parent = record.parent;
  return info;
}

/** A read bound is a whole number of 0 or more: NaN once compared false with every sequence and read everything. */
function assertSequenceBound(name: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
    throw new InvalidArgumentError(`${name} must be a whole number of 0 or more, not ${String(value)}.`);
}

function expectation(options: StoreAppendOptions): { expectedLastSequence?: number } {
  return options.expectedLastSequence === undefined ? {} : { expectedLastSequence: options.expectedLastSequence };
}
