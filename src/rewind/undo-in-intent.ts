import { createHash } from "node:crypto";
import type { LockedSession, StorageBackend } from "../backend/types.js";
import { StoreTamperedError, isAgentTapeError } from "../core/errors.js";
import { SYNC_FILESYSTEM_FROM } from "../core/sync-filesystem.js";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { markBlobsInFlight } from "../blobs/in-flight.js";
import { checkBlob, storeBlobsThenReference } from "../blobs/store-then-reference.js";

/**
 * Up to this many bytes of undo snapshot (and fewer blobs than a bulk rewind makes durable by one syncfs)
 * ride in the intent itself, so that one fsynced write holds both (docs/ARCHITECTURE.md, "Rewind intent").
 * A blob stored on its own first cost a rewind of one file three waits for the disk (the blob, its shard,
 * blobs/) before the intent's two: about a third of its time here.
 */
export const UNDO_IN_INTENT_MAX_BYTES = 256 * 1024;

/** Whether {@link writeIntentWithUndo} puts these bytes in the intent rather than storing them first. */
export function carriesUndo(blobs: ReadonlyMap<string, Buffer>): boolean {
  let total = 0;
  for (const bytes of blobs.values()) total += bytes.length;
  return blobs.size > 0 && blobs.size < SYNC_FILESYSTEM_FROM && total <= UNDO_IN_INTENT_MAX_BYTES;
}

/** One undo blob carried by the intent: its name and its bytes, base64. */
export interface UndoBlobInIntent {
  hash: string;
  base64: string;
}

/**
 * Saves the undo snapshot's bytes and writes the intent, durably, before any file is touched. A few small
 * blobs go inside the intent (stored as blobs during step 1, see {@link storeUndoFromIntent}); more are
 * stored first, then referenced by the intent (store-then-reference): written without an fsync each, and made
 * durable with the intent's bytes in one wait where the backend can (writeRecordWithBlobs), before the intent is
 * renamed into place (docs/ARCHITECTURE.md, "Rewind intent", the rounds a rewind waits for).
 */
export async function writeIntentWithUndo(
  locked: LockedSession,
  snapshot: { blobs: ReadonlyMap<string, Buffer> },
  intent: { undoBlobs?: UndoBlobInIntent[] },
  concurrency: number,
  writeIntent: (unsynced: readonly string[]) => Promise<void>,
): Promise<void> {
  if (!carriesUndo(snapshot.blobs))
    return storeBlobsThenReference(locked, snapshot, concurrency, writeIntent, {
      referenceSyncs: locked.writeRecordWithBlobs !== undefined,
    });
  intent.undoBlobs = [...snapshot.blobs].map(([hash, bytes]) => ({ hash, base64: bytes.toString("base64") }));
  await writeIntent([]);
}

/**
 * The undo blobs an intent carries, decoded and each checked against its name, before anything is written:
 * an intent carrying bytes that do not match is STORE_TAMPERED.
 */
export function undoBlobsOf(sessionId: string, carried: readonly UndoBlobInIntent[]): Map<string, Buffer> {
  const blobs = new Map<string, Buffer>();
  for (const { hash, base64 } of carried) {
    const bytes = Buffer.from(String(base64), "base64");
    if (createHash("sha256").update(bytes).digest("hex") !== hash)
      throw new StoreTamperedError(sessionId, `records/rewind-intent.json carries undo bytes not named ${hash}`);
    blobs.set(hash, bytes);
  }
  return blobs;
}

/**
 * Stores the undo blobs an intent carries ({@link undoBlobsOf}), durable when this returns: run with step 1,
 * before the log is cut and the marker references them (until then the intent holds the bytes). `fresh`:
 * written by this process just now (none can be there half written); otherwise (recovery, after a crash or a
 * power loss) one already there is read and checked first, and a damaged one written again.
 */
export async function storeUndoBlobs(
  backend: StorageBackend,
  locked: LockedSession,
  blobs: ReadonlyMap<string, Buffer>,
  fresh: boolean,
): Promise<void> {
  if (blobs.size === 0) return;
  await markBlobsInFlight(locked);
  const later = locked.syncBlobs !== undefined; // else every write is made durable on its own
  if (fresh && locked.writeBlobs) {
    // The backend batches (PostgreSQL: one statement for them all, not one round trip per blob).
    await locked.writeBlobs(blobs, { durable: !later });
    if (later) await locked.syncBlobs!(blobs.keys());
    return;
  }
  await forEachLimited([...blobs], 8, async ([hash, bytes]) => {
    if (!fresh && (await intact(backend, locked.sessionId, hash, bytes.length))) return;
    if (!fresh) await locked.deleteBlob(hash);
    await locked.writeBlob(hash, bytes, { durable: !later });
  });
  if (later) await locked.syncBlobs!(blobs.keys());
}

async function intact(backend: StorageBackend, id: string, hash: string, bytes: number): Promise<boolean> {
  try {
    await checkBlob(backend, id, hash, { bytes });
    return true;
  } catch (error) {
    if (isAgentTapeError(error, "BLOB_NOT_FOUND") || isAgentTapeError(error, "BLOB_CORRUPT")) return false;
    throw error;
  }
}
