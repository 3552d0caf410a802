// A fork: a new session holding a parent's events through a point, then a `session_fork` event naming the
// parent, plus the blobs the copied checkpoints need (docs/ARCHITECTURE.md, "Forks").
import type { LockedSession, SessionRecord, StorageBackend } from "../backend/types.js";
import { SessionNotFoundError } from "../core/errors.js";
import type { ForkPayload, StoredEvent } from "../core/events.js";
import { assertSessionId, newId } from "../core/ids.js";
import { signalOf } from "../core/defined-fields.js";
import { addReferences } from "../blobs/references.js";
import { isDroppedCheckpoint, raiseHorizon, readHorizonMark, type HorizonMark } from "../blobs/retention-horizon.js";
import { resolveForkPoint } from "./sequence-on-tape.js";
import { rehomed, type WorkspaceMove } from "./rehome.js";
import { toInfo } from "./session-info.js";
import type { ForkOptions, SessionInfo } from "./store-options.js";

/** Builds a session's `session_fork` event (the store's write path, which checks it like any append). */
export type ForkEventOf = (sessionId: string, payload: ForkPayload) => StoredEvent;

/** `SessionStore.fork` with the parent's lock held; `move` re-homes the copied events into the fork's own folder. */
export async function forkLocked(
  backend: StorageBackend,
  forkEventOf: ForkEventOf,
  locked: LockedSession,
  options: ForkOptions,
  move?: WorkspaceMove,
): Promise<SessionInfo> {
  const parentId = locked.sessionId;
  const id = options.id ?? newId();
  assertSessionId(id);
  const parent = await backend.getSession(parentId, signalOf(options));
  if (!parent) throw new SessionNotFoundError(parentId);
  const at = await resolveForkPoint(backend, parentId, options, locked.lastSequence, signalOf(options));
  const forkPayload: ForkPayload = { parentId, atSequence: at };
  if (move) forkPayload.workspace = move.to;
  const forkEvent = forkEventOf(id, forkPayload);
  const horizon = await readHorizonMark(backend, parentId, options);
  const copy = copiedPrefix(backend, { parentId, id, at, horizon, forkEvent, move, options });
  const record: SessionRecord = { id, createdAt: new Date().toISOString(), parent: { id: parentId, atSequence: at } };
  const title = options.title ?? parent.title;
  if (title !== undefined) record.title = title;
  const workspace = move ? move.to : parent.workspace;
  if (workspace !== undefined) record.workspace = workspace;
  await backend.createSession(record, copy.events, {
    ...signalOf(options),
    blobsFrom: { sessionId: parentId, hashes: copy.hashes },
  });
  await inheritHorizon(backend, id, horizon, copy.last(), options);
  return toInfo(record, forkEvent);
}

/**
 * The parent's events through `at`, re-addressed to the fork, then the fork event: streamed from the parent's
 * log into the new one, so memory does not follow the log's length. The blobs the copied checkpoints point at
 * are collected on the way, for the backend to link.
 */
function copiedPrefix(
  backend: StorageBackend,
  fork: {
    parentId: string;
    id: string;
    at: number;
    horizon: HorizonMark;
    forkEvent: StoredEvent;
    move: WorkspaceMove | undefined;
    options: ForkOptions;
  },
): { events: AsyncGenerator<StoredEvent>; hashes: Set<string>; last: () => number } {
  const hashes = new Set<string>();
  let last = 0;
  async function* events(): AsyncGenerator<StoredEvent> {
    const { parentId, id, at, horizon, forkEvent, move, options } = fork;
    for await (const event of backend.readEvents(parentId, { toSequence: at, ...signalOf(options) })) {
      if (!isDroppedCheckpoint(event, horizon)) addReferences(event, hashes);
      last = event.sequence;
      const copy = { ...event, sessionId: id };
      yield move ? rehomed(copy, move) : copy;
    }
    forkEvent.sequence = last + 1;
    yield forkEvent;
  }
  return { events: events(), hashes, last: () => last };
}

/**
 * The copied checkpoints retention dropped came without blobs: the fork inherits the horizon, capped at its
 * copied prefix so its own new checkpoints stay whole.
 */
async function inheritHorizon(
  backend: StorageBackend,
  id: string,
  horizon: HorizonMark,
  last: number,
  options: ForkOptions,
): Promise<void> {
  if (!(horizon.through > 0 && last > 0)) return;
  const child = await backend.lock(id, signalOf(options));
  try {
    await raiseHorizon(child, 0, Math.min(horizon.through, last), horizon.throughId);
  } finally {
    await child.release();
  }
}
