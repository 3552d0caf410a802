// Package-internal: the layers above the session (checkpoint, rewind, maintenance) write under the raw lock.
// Each store lends its raw-lock operations here as it is made; src/index.ts does not export this module, so a
// user of `agent-tape` cannot reach them, and a store's instances carry none of them.
import type { LockedSession } from "../backend/types.js";
import type { StoredEvent } from "../core/events.js";
import type { WorkspaceMove } from "./rehome.js";
import type { ForkOptions, SessionInfo, WithLockOptions } from "./store-options.js";

/** What a store lends the package's own layers. */
export interface LockedAccess {
  /** Checks an event against the store's schemas and builds its envelope (sequence 0 until appended). */
  eventFor(sessionId: string, input: { type: string; payload: unknown }): StoredEvent;
  /** {@link eventFor} for a rewind's marker: its payload read back from JSON made in time slices (write-path.ts). */
  markerFor(sessionId: string, input: { type: string; payload: unknown }): Promise<StoredEvent>;
  /** Appends events made by {@link eventFor} under a held lock, numbered after its last sequence (in place). */
  appendUnderLock(locked: LockedSession, events: StoredEvent[]): Promise<StoredEvent[]>;
  /**
   * Like `SessionStore.withLock`, but `fn` gets the backend's raw {@link LockedSession}: it can truncate, write
   * blobs and records. For checkpoint, rewind, undo and gc only.
   */
  withLockedSession<T>(id: string, fn: (locked: LockedSession) => Promise<T>, options?: WithLockOptions): Promise<T>;
  /**
   * `SessionStore.fork` of the session whose lock `locked` holds, into its own folder: the fork records `move.to`
   * as its workspace and re-homes the copied events there (rehome.ts). For the rewind layer's
   * `forkIntoWorkspace`, which has filled that folder first.
   */
  forkUnderLock(locked: LockedSession, options: ForkOptions, move: WorkspaceMove): Promise<SessionInfo>;
}

const lent = new WeakMap<object, LockedAccess>();

/** Called once by each store as it is made. */
export function lendLockedAccess(store: object, access: LockedAccess): void {
  lent.set(store, access);
}

/** The raw-lock operations of `store` (a SessionStore). */
export function lockedAccess(store: object): LockedAccess {
  const access = lent.get(store);
  if (!access) throw new TypeError("Not a SessionStore of this copy of agent-tape.");
  return access;
}
