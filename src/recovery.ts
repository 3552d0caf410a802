import type { LockedSession, StorageBackend } from "./backend/types.js";
import { BLOBS_IN_FLIGHT_RECORD, recoverBlobsInFlight } from "./blobs-in-flight.js";
import { REWIND_INTENT_RECORD, recoverInterruptedRewind } from "./rewind/intent.js";

/**
 * Runs each time a session's lock is taken, before anything else: work that a crashed or
 * cancelled holder left half done is finished or undone here, so every operation starts from a
 * consistent session. Each step it calls is idempotent, so a crash during recovery is fine too.
 */
export async function recoverInterruptedWork(backend: StorageBackend, locked: LockedSession): Promise<void> {
  const records = await backend.listRecords(locked.sessionId);
  if (records.length === 0) return;
  // The rewind first: the prune below must see the marker the intent appends.
  if (records.includes(REWIND_INTENT_RECORD)) await recoverInterruptedRewind(backend, locked);
  if (records.includes(BLOBS_IN_FLIGHT_RECORD)) await recoverBlobsInFlight(backend, locked);
}
