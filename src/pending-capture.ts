import type { LockedSession, StorageBackend } from "./backend/types.js";
import { referencedBlobs } from "./references.js";

/** Name of the side record a capture writes while its new blobs are not yet indexed by an event. */
export const PENDING_CAPTURE_RECORD = "capture-pending";

export interface PendingCapture {
  /** The log's last sequence when the capture began; its event, if written, comes after. */
  afterSequence: number;
  /** Blobs the capture was writing that did not exist before it. */
  blobs: string[];
}

/**
 * Finishes a capture that died between writing blobs and appending its event: the blobs no
 * event references are removed (they did not exist before the capture, so nothing older can
 * need them), and the record goes.
 */
export async function recoverPendingCapture(backend: StorageBackend, locked: LockedSession): Promise<void> {
  const pending = (await backend.readRecord(locked.sessionId, PENDING_CAPTURE_RECORD)) as PendingCapture | undefined;
  if (!pending) return;
  const later = [];
  for await (const event of backend.readEvents(locked.sessionId, { fromSequence: pending.afterSequence + 1 })) later.push(event);
  const kept = referencedBlobs(later);
  for (const hash of pending.blobs) if (!kept.has(hash)) await locked.deleteBlob(hash);
  await locked.deleteRecord(PENDING_CAPTURE_RECORD);
}
