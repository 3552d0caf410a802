import type { LockedSession, StorageBackend } from "../backend/types.js";
import { pruneUnreferencedBlobs } from "./prune.js";

/**
 * Name of the side record that says "this lock's holder may be writing blobs nothing references
 * yet". It is written once per hold of the lock, before the first blob, and removed when the
 * lock is given up — by then every blob written is referenced, or was deleted when its
 * operation failed. Found at lock time, it means the last holder died mid-way: the next holder
 * prunes every unreferenced blob. One record per lease, not per capture, keeps the note off the
 * hot path: a record write per capture (bench "capture 1 new 4 KB blob @10k files vs durable floor").
 */
export const BLOBS_IN_FLIGHT_RECORD = "blobs-in-flight";

const marked = new WeakSet<LockedSession>();

/**
 * Leaves the note before this lock's first blob write. Not fsynced: it guards against a process crash;
 * after a power loss `agent-tape gc` collects.
 */
export async function markBlobsInFlight(locked: LockedSession): Promise<void> {
  if (marked.has(locked)) return;
  await locked.writeRecord(
    BLOBS_IN_FLIGHT_RECORD,
    { pid: process.pid, at: new Date().toISOString() },
    { durable: false },
  );
  marked.add(locked);
}

/** Removes the note as the lock is given up (every blob written under it is referenced by now). */
export async function clearBlobsInFlight(locked: LockedSession): Promise<void> {
  if (!marked.has(locked)) return;
  marked.delete(locked);
  if (locked.held) await locked.deleteRecord(BLOBS_IN_FLIGHT_RECORD);
}

/** The last holder died while writing blobs: drop its partial writes and every unreferenced blob. */
export async function recoverBlobsInFlight(backend: StorageBackend, locked: LockedSession): Promise<void> {
  await locked.discardPartialWrites?.();
  await pruneUnreferencedBlobs(backend, locked);
  await locked.deleteRecord(BLOBS_IN_FLIGHT_RECORD);
}
