import type { LockedSession, StorageBackend } from "./backend/types.js";
import { PENDING_CAPTURE_RECORD, recoverPendingCapture } from "./pending-capture.js";
import { archiveMarker } from "./rewind/archive.js";
import { REWIND_INTENT_RECORD, recoverInterruptedRewind } from "./rewind/intent.js";

/**
 * Runs each time a session's lock is taken, before anything else: work that a crashed or
 * cancelled holder left half done is finished or undone here, so every operation starts from a
 * consistent session. Each step it calls is idempotent, so a crash during recovery is fine too.
 */
export async function recoverInterruptedWork(backend: StorageBackend, locked: LockedSession): Promise<void> {
  const records = await backend.listRecords(locked.sessionId);
  if (records.length === 0) return;
  // The rewind first: its intent may reference blobs that a pending-capture record also lists.
  if (records.includes(REWIND_INTENT_RECORD)) await recoverInterruptedRewind(backend, locked);
  if (records.includes(PENDING_CAPTURE_RECORD)) await recoverPendingCapture(backend, locked);
  // An archive for a marker past the log's end was written by a rewind that died before its
  // intent: that rewind never happened, and the archive would only keep blobs from being pruned.
  for (const name of records) {
    const marker = archiveMarker(name);
    if (marker !== undefined && marker > locked.lastSequence) await locked.deleteRecord(name);
  }
}
