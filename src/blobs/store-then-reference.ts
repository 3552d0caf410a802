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
  reference: () => Promise<T>,
): Promise<T> {
  const written: string[] = [];
  try {
    if (snapshot.blobs.size > 0) {
      await markBlobsInFlight(locked);
      const together = snapshot.blobs.size >= SYNC_FILESYSTEM_FROM && locked.syncBlobs !== undefined;
      await forEachLimited([...snapshot.blobs], concurrency, async ([hash, bytes]) => {
        if (await locked.writeBlob(hash, bytes, { durable: !together })) written.push(hash);
      });
      if (together && written.length > 0) await locked.syncBlobs!(written);
    }
    return await reference();
  } catch (error) {
    for (const hash of written) await locked.deleteBlob(hash).catch(() => undefined);
    throw error;
  }
}

/** A blob's bytes, re-hashed: BLOB_NOT_FOUND if absent, BLOB_CORRUPT if they no longer match their name. */
export async function readVerifiedBlob(
  backend: StorageBackend,
  id: string,
  hash: string,
  options: SignalOption = {},
): Promise<Buffer> {
  const bytes = await backend.readBlob(id, hash, options);
  if (!bytes) {
    if (!(await backend.getSession(id, options))) throw new SessionNotFoundError(id);
    throw new BlobNotFoundError(id, hash);
  }
  const actual = createHash("sha256").update(bytes).digest("hex");
  if (actual !== hash) throw new BlobCorruptError(id, hash, actual);
  return bytes;
}
