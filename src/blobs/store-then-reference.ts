import { createHash } from "node:crypto";
import type { LockedSession, SignalOption, StorageBackend } from "../backend/types.js";
import { BlobCorruptError, BlobNotFoundError, SessionNotFoundError } from "../core/errors.js";
import { markBlobsInFlight } from "./in-flight.js";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { SYNC_FILESYSTEM_FROM } from "../core/sync-filesystem.js";

/**
 * Stores the snapshot's new blobs, then runs `reference` — which must make something durable
 * that references them (a checkpoint event, a rewind intent). If anything fails before the
 * reference exists, the blobs this call wrote are deleted at once, so a failed operation leaves
 * no orphan; a crash is covered by the blobs-in-flight note (in-flight.ts; docs/ARCHITECTURE.md, "Blobs").
 * Many new blobs are written without an fsync each and made durable together (`syncBlobs`: one
 * syncfs on the fs backend) before `reference` runs; a few are written durable one by one.
 */
export async function storeBlobsThenReference<T>(
  locked: LockedSession,
  snapshot: { blobs: ReadonlyMap<string, Uint8Array> },
  concurrency: number,
  reference: (unsynced: readonly string[]) => Promise<T>,
  options: { referenceSyncs?: boolean } = {},
): Promise<T> {
  const written: string[] = [];
  // With `referenceSyncs`, the blobs written without an fsync are handed to `reference`, which makes them
  // durable with its own write (writeRecordWithBlobs: one wait for both); else they are made durable here. Those
  // the store held already too: a scan writes without an fsync what nothing references yet, and `reference` is
  // about to (test/checkpoint/scanned-blobs-durable.process.test.ts).
  let unsynced: string[] = [];
  const synced = async (relaxed: boolean) => {
    if (!relaxed) return;
    const all = [...snapshot.blobs.keys()];
    if (options.referenceSyncs) unsynced = all;
    else await locked.syncBlobs!(all);
  };
  try {
    if (snapshot.blobs.size > 0) {
      await markBlobsInFlight(locked);
      if (locked.writeBlobs) {
        // The backend batches (PostgreSQL: one statement for the snapshot, not a round trip per blob), relaxed
        // where the backend can make them durable after.
        const relaxed = locked.syncBlobs !== undefined;
        written.push(...(await locked.writeBlobs(snapshot.blobs, { durable: !relaxed })));
        await synced(relaxed);
        return await reference(unsynced);
      }
      const together = snapshot.blobs.size >= SYNC_FILESYSTEM_FROM && locked.syncBlobs !== undefined;
      if (together && locked.writeScanBlobs) {
        // Many at once are stored as a scan's are: small ones appended to the pack, not a file each. Making a file
        // was most of a 1,000-file rewind's undo copy on the project's machine (docs/ARCHITECTURE.md, "Batched
        // file work").
        written.push(...(await locked.writeScanBlobs(snapshot.blobs, { callerWaits: true })));
        await synced(true);
        return await reference(unsynced);
      }
      await forEachLimited([...snapshot.blobs], concurrency, async ([hash, bytes]) => {
        if (await locked.writeBlob(hash, bytes, { durable: !together })) written.push(hash);
      });
      await synced(together);
    }
    return await reference(unsynced);
  } catch (error) {
    for (const hash of written) await locked.deleteBlob(hash).catch(() => undefined);
    throw error;
  }
}

/** How a blob is read: `bytes`, when known, is the length its snapshot recorded. */
export interface VerifiedBlobOptions extends SignalOption {
  /**
   * The length the referencing snapshot recorded. Given, no more than it (and one byte) is read or
   * inflated, whatever the blob file claims, and a blob of another length is BLOB_CORRUPT: a compression
   * bomb costs what the checkpoint said the file was (docs/ARCHITECTURE.md, "Blobs").
   */
  bytes?: number | undefined;
}

/** A blob's bytes, re-hashed: BLOB_NOT_FOUND if absent, BLOB_CORRUPT if they no longer match their name. */
export async function readVerifiedBlob(
  backend: StorageBackend,
  id: string,
  hash: string,
  options: VerifiedBlobOptions = {},
): Promise<Buffer> {
  const { bytes: recorded, ...rest } = options;
  const bytes = await backend.readBlob(id, hash, recorded === undefined ? rest : { ...rest, maxBytes: recorded });
  if (!bytes) {
    if (!(await backend.getSession(id, rest))) throw new SessionNotFoundError(id);
    throw new BlobNotFoundError(id, hash);
  }
  const actual = createHash("sha256").update(bytes).digest("hex");
  if (recorded !== undefined && bytes.length !== recorded) throw new BlobCorruptError(id, hash, actual, recorded);
  if (actual !== hash) throw new BlobCorruptError(id, hash, actual);
  return bytes;
}

/**
 * {@link readVerifiedBlob} without holding the blob: its bytes hashed as a stream where the backend can
 * (`digestBlob`: memory of a chunk whatever the store holds), else read with the recorded length as cap.
 */
export async function checkBlob(
  backend: StorageBackend,
  id: string,
  hash: string,
  options: VerifiedBlobOptions = {},
): Promise<void> {
  if (!backend.digestBlob) {
    await readVerifiedBlob(backend, id, hash, options);
    return;
  }
  const { bytes: recorded, ...rest } = options;
  const digest = await backend.digestBlob(id, hash, recorded === undefined ? rest : { ...rest, maxBytes: recorded });
  if (!digest) {
    if (!(await backend.getSession(id, rest))) throw new SessionNotFoundError(id);
    throw new BlobNotFoundError(id, hash);
  }
  if (recorded !== undefined && digest.bytes !== recorded)
    throw new BlobCorruptError(id, hash, digest.sha256, recorded);
  if (digest.sha256 !== hash) throw new BlobCorruptError(id, hash, digest.sha256);
}
