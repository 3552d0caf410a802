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
import { isAgentTapeError, InvalidArgumentError, SessionNotFoundError, StoreClosedError } from "../core/errors.js";
import {
  builtinEvents,
  type BuiltinEvents,
  type EventInput,
  type EventSchemas,
  type ForkPayload,
  type StoredEvent,
  type TypedEvent,
} from "../core/events.js";
import { assertSessionId, newId } from "../core/ids.js";
import { pendingForReaders, recoverInterruptedWork, type PendingRewind } from "./recovery.js";
import { EventStream, inBatches } from "./event-stream.js";
import { mapLimited } from "../core/bounded-concurrency.js";
import { clearBlobsInFlight } from "../blobs/in-flight.js";
import { SessionLease } from "./lease.js";
import { checkForkPointForm } from "./sequence-on-tape.js";
import { foldConversation, type Conversation } from "./conversation.js";
import type { RetentionOutcome, RetentionPolicy } from "../core/retention-policy.js";
import { retentionOnOpen } from "./retention-on-open.js";
import { definedFields, signalOf } from "../core/defined-fields.js";
import { WritePath } from "./write-path.js";
import { lendLockedAccess } from "./locked-access.js";
import { forkLocked } from "./fork.js";
import { toInfo } from "./session-info.js";
import { heldSession } from "./held-session.js";
import { existingFolder } from "./existing-folder.js";
import {
  DEFAULT_MAX_EVENT_BYTES,
  type CreateOptions,
  type ForkOptions,
  type HeldSession,
  type Known,
  type KnownType,
  type ListOptions,
  type ReadOptions,
  type SalvageResult,
  type SessionInfo,
  type SessionStoreOptions,
  type StoreAppendOptions,
  type WithLockOptions,
} from "./store-options.js";

export type {
  CreateOptions,
  ForkOptions,
  HeldSession,
  ReadOptions,
  SalvageResult,
  SessionInfo,
  SessionStoreOptions,
  StoreAppendOptions,
  WithLockOptions,
} from "./store-options.js";
export type { PendingRewind } from "./recovery.js";

/** Sessions `list()` reads at once: enough to hide each one's latency, few enough for any open-file limit. */
const LIST_CONCURRENCY = 16;

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
  readonly #writes: WritePath;
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
    this.#writes = new WritePath({
      schemas: this.schemas,
      maxEventBytes: this.maxEventBytes,
      durability: this.durability,
      lease: (id) => this.lease(id),
    });
    lendLockedAccess(this, {
      eventFor: (sessionId, input) => this.#writes.toEvent(sessionId, input, undefined, false),
      markerFor: (sessionId, input) => this.#writes.markerEvent(sessionId, input),
      appendUnderLock: (locked, events) => this.#writes.appendLocked(locked, events),
      withLockedSession: (id, fn, options = {}) => this.#withLockedSession(id, fn, options),
      forkUnderLock: (locked, options, move) => forkLocked(this.backend, this.#forkEventOf, locked, options, move),
    });
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
   * Every session (or those `idPrefix` names), most recently updated first. Reads each one's record and last event
   * only (not its log), a few sessions at a time: thousands of sessions never exhaust open files.
   */
  async list(options: ListOptions = {}): Promise<SessionInfo[]> {
    this.assertOpen();
    const ids = (await this.backend.listSessionIds(options)).filter((id) => id.startsWith(options.idPrefix ?? ""));
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
    const deleted = await this.#writes.runInOrder(
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
    const expected = options.expectedLastSequence;
    const groupCommit = this.durability !== "fsync" && expected === undefined;
    return (await this.write(id, [event], options, groupCommit))[0] as TypedEvent<Pick<Known<E>, T>>;
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
    return (await this.write(id, events, options, false)) as TypedEvent<Pick<Known<E>, T>>[];
  }

  /** Options in one literal, not spread copies; not async (one returning a promise costs one more, two ticks). */
  private write(
    id: string,
    inputs: readonly { type: string; payload: unknown }[],
    options: StoreAppendOptions,
    groupCommit: boolean,
  ): Promise<StoredEvent[]> {
    try {
      this.assertOpen();
      assertSessionId(id);
      const { signal, expectedLastSequence } = options;
      return this.#writes.write(id, inputs, { signal, expectedLastSequence, groupCommit });
    } catch (error) {
      return Promise.reject(error);
    }
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
        const held = heldSession<E>(this.#writes, locked);
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
    return this.#writes.runInOrder(id, fn, options.signal, options.detectReentry ?? true);
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
    return this.#writes.runInOrder(
      parentId,
      (locked) => forkLocked(this.backend, this.#forkEventOf, locked, { ...options, id }),
      options.signal,
    );
  }

  /** The fork's `session_fork` event, built and checked like any append. */
  readonly #forkEventOf = (sessionId: string, payload: ForkPayload) =>
    this.#writes.toEvent(sessionId, { type: "session_fork", payload });

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
        beforeLock: () => this.makeRoomForLock(id),
      });
      this.leases.set(id, lease);
    }
    return lease;
  }

  /**
   * Before taking `id`'s lock: when the backend can hold only so many locks at once (PostgreSQL: a pooled
   * connection each), gives up the oldest idle leases of other sessions, so a store writing to many sessions
   * never waits for its own idle lease to run out (test/backend/postgres-idle-leases.test.ts).
   */
  private async makeRoomForLock(id: string): Promise<void> {
    const max = this.backend.maxHeldLocks;
    if (max === undefined) return;
    const held = [...this.leases.values()].filter((lease) => lease.sessionId !== id && lease.holding);
    const idle = held.filter((lease) => lease.idle).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const lease of idle.slice(0, Math.max(0, held.length - (max - 1)))) await lease.releaseIfIdle();
  }
}

/** A read bound is a whole number of 0 or more: NaN once compared false with every sequence and read everything. */
function assertSequenceBound(name: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
    throw new InvalidArgumentError(`${name} must be a whole number of 0 or more, not ${String(value)}.`);
}
