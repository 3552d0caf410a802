import type { LockedSession, StorageBackend } from "./backend/types.js";
import { PENDING_CAPTURE_RECORD, recoverPendingCapture } from "./pending-capture.js";

/**
 * Runs each time a session's lock is taken, before anything else: work that a crashed or
 * cancelled holder left half done is finished or undone here, so every operation starts from a
 * consistent session. Each step it calls is idempotent, so a crash during recovery is fine too.
 */
export async function recoverInterruptedWork(backend: StorageBackend, locked: LockedSession): Promise<void> {
  const records = await backend.listRecords(locked.sessionId);
  if (records.length === 0) return;
  if (records.includes(PENDING_CAPTURE_RECORD)) await recoverPendingCapture(backend, locked);
}
