// The options and results of SessionStore (session-store.ts): what a caller passes and gets back.
import type { CorruptLine, Durability, LockWait, SignalOption, StorageBackend } from "../backend/types.js";
import type { BuiltinEvents, EventInput, EventSchemas, TypedEvent } from "../core/events.js";
import type { RetentionPolicy } from "../core/retention-policy.js";
import type { PendingRewind } from "./recovery.js";

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

/** What {@link SessionStore.list} lists. */
export interface ListOptions extends SignalOption {
  /** Only the sessions whose id starts with this; the others are not read at all (an adapter's one project). */
  idPrefix?: string;
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
export type Known<E extends EventSchemas> = BuiltinEvents & E;
export type KnownType<E extends EventSchemas> = keyof Known<E> & string;

export interface SalvageResult<E extends EventSchemas, T extends KnownType<E> = KnownType<E>> {
  events: TypedEvent<Pick<Known<E>, T>>[];
  corrupt: CorruptLine[];
}

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
