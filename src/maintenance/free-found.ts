// Maintenance: frees what gc or retention found in one session, and counts the bytes that frees.
import type { LockedSession, StorageBackend } from "../backend/types.js";
import { deleteBlobsOf } from "../blobs/prune.js";
import { signalOf } from "../core/defined-fields.js";
import { lockedAccess } from "../session/locked-access.js";
import type { SessionStore } from "../session/session-store.js";
import { storedBlobBytes } from "./stored-bytes.js";

/** One maintenance pass (gc, retention) over a store: a dry run or a real one, and the signal that stops it. */
export interface MaintenancePass {
  store: SessionStore<any>;
  dryRun: boolean;
  signal: AbortSignal | undefined;
}

/**
 * Runs `fn` under the session's lock, so no capture sits between writing a blob and the event that references it
 * (such a blob would look unreferenced and be lost). A pass runs no user code while locked: no reentry check.
 */
export function underSessionLock<T>(
  pass: MaintenancePass,
  sessionId: string,
  fn: (locked: LockedSession) => Promise<T>,
): Promise<T> {
  return lockedAccess(pass.store).withLockedSession(sessionId, fn, { ...signalOf(pass.signal), detectReentry: false });
}

/** What a pass found to free in one session: rewind archives, and blobs nothing references any more. */
export interface FoundInSession {
  sessionId: string;
  archives: readonly string[];
  blobs: readonly string[];
}

/**
 * Frees what was found, under the session's lock (`locked`): `first` (retention raises its horizon there), then
 * the archives, then the blobs, then the packs compacted, since a packed blob's bytes are freed only when its pack
 * is rewritten. Archives first: a crash in between leaves blobs a later gc finds, never an archive without its
 * blobs. Returns the bytes freed as the backend counts them (`sizeOf`: the session measured before and after),
 * undefined when it cannot tell; a dry run deletes nothing and adds up what would go.
 */
export async function freeFound(
  backend: StorageBackend,
  locked: LockedSession,
  found: FoundInSession,
  options: { dryRun: boolean; first?: () => Promise<void> },
): Promise<number | undefined> {
  if (options.dryRun) return backend.sizeOf ? bytesOf(backend, found) : undefined;
  const before = backend.sizeOf ? await backend.sizeOf(found.sessionId) : undefined;
  await options.first?.();
  for (const name of found.archives) await locked.deleteRecord(name, { archivedLog: true });
  await deleteBlobsOf(locked, found.blobs);
  if (found.blobs.length > 0) await locked.compactBlobs?.();
  if (before === undefined) return undefined;
  return Math.max(0, before - (await backend.sizeOf!(found.sessionId)));
}

/**
 * What a dry run would free, counted as the backends count `sizeOf`: blob bytes as stored (compressed on the
 * fs backend, docs/ARCHITECTURE.md, "Blobs"), and record JSON (with the log bytes a rewind archive copied).
 */
async function bytesOf(backend: StorageBackend, found: FoundInSession): Promise<number> {
  let bytes = 0;
  for (const hash of found.blobs) bytes += await storedBlobBytes(backend, found.sessionId, hash);
  for (const name of found.archives) {
    const archive = await backend.readRecord(found.sessionId, name);
    if (archive === undefined) continue;
    bytes += Buffer.byteLength(JSON.stringify(archive));
    // A byte-range archive's copy of the cut log goes with it (src/blobs/archives.ts).
    const log = (archive as { log?: { bytes?: unknown } } | null)?.log;
    if (typeof log?.bytes === "number") bytes += log.bytes;
  }
  return bytes;
}
