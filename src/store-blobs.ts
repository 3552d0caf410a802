import { createHash } from "node:crypto";
import type { LockedSession, SignalOption, StorageBackend } from "./backend/types.js";
import { BlobCorruptError, BlobNotFoundError, SessionNotFoundError } from "./errors.js";
import { PENDING_CAPTURE_RECORD, recoverPendingCapture, type PendingCapture } from "./pending-capture.js";
import { forEachLimited, type Snapshot } from "./snapshot.js";

/**
 * Writes the snapshot's blobs that are not stored yet, under a lock the caller holds. Their
 * names go into a pending-capture record first, so if this process dies before an event (or a
 * rewind intent) references them, the next holder of the lock removes them instead of leaving
 * orphans (recovery.ts). The caller deletes the record once the reference is durable.
 * Returns true when a pending record was written.
 */
export async function storeSnapshotBlobs(locked: LockedSession, snapshot: Snapshot, concurrency: number): Promise<boolean> {
  if (snapshot.blobs.size === 0) return false;
  const missing: string[] = [];
  for (const hash of snapshot.blobs.keys()) if (!(await locked.hasBlob(hash))) missing.push(hash);
  if (missing.length === 0) return false;
  const pending: PendingCapture = { afterSequence: locked.lastSequence, blobs: missing };
  // Not fsynced: it guards against a process crash; after a power loss `agent-tape gc` collects.
  await locked.writeRecord(PENDING_CAPTURE_RECORD, pending, { durable: false });
  await forEachLimited(missing, concurrency, async (hash) => {
    await locked.writeBlob(hash, snapshot.blobs.get(hash)!);
  });
  return true;
}

/**
 * Stores the snapshot's new blobs, then runs `reference` — which must make something durable
 * that references them (a checkpoint event, a rewind intent) — then drops the pending record.
 * If anything fails before the reference exists, the blobs written are removed at once: this
 * process keeps the lock, and its next capture's pending record would replace this one, leaving
 * them orphaned for good.
 */
export async function storeBlobsThenReference<T>(
  backend: StorageBackend,
  locked: LockedSession,
  snapshot: Snapshot,
  concurrency: number,
  reference: () => Promise<T>,
): Promise<T> {
  let pendingWritten = false;
  let result: T;
  try {
    pendingWritten = await storeSnapshotBlobs(locked, snapshot, concurrency);
    result = await reference();
  } catch (error) {
    await recoverPendingCapture(backend, locked).catch(() => undefined);
    throw error;
  }
  if (pendingWritten) await locked.deleteRecord(PENDING_CAPTURE_RECORD);
  return result;
}

/** A blob's bytes, re-hashed: BLOB_NOT_FOUND if absent, BLOB_CORRUPT if they no longer match their name. */
export async function readVerifiedBlob(backend: StorageBackend, id: string, hash: string, options: SignalOption = {}): Promise<Buffer> {
  const bytes = await backend.readBlob(id, hash, options);
  if (!bytes) {
    if (!(await backend.getSession(id, options))) throw new SessionNotFoundError(id);
    throw new BlobNotFoundError(id, hash);
  }
  const actual = createHash("sha256").update(bytes).digest("hex");
  if (actual !== hash) throw new BlobCorruptError(id, hash, actual);
  return bytes;
}
