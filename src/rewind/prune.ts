import type { LockedSession, StorageBackend } from "../backend/types.js";
import type { StoredEvent } from "../events.js";
import { referencedBlobs } from "../references.js";
import { forEachLimited } from "../limited.js";
import { listArchives, readArchive } from "./archive.js";

/**
 * Deletes the blobs nothing references any more. Referenced means: by an event of the live log,
 * by an event about to be appended (`alsoKeep`), or by an event in a kept rewind archive (so an
 * undo can still restore them). Runs under the lock, so no capture can be between writing a blob
 * and indexing it. Returns how many blobs were deleted.
 */
export async function pruneUnreferencedBlobs(backend: StorageBackend, locked: LockedSession, alsoKeep: readonly StoredEvent[] = []): Promise<number> {
  const keep = referencedBlobs(alsoKeep);
  for await (const event of backend.readEvents(locked.sessionId)) referencedBlobs([event], keep);
  for (const name of await listArchives(backend, locked.sessionId)) {
    const archive = await readArchive(backend, locked.sessionId, name);
    if (archive) referencedBlobs(archive.events, keep);
  }
  const unreferenced = (await backend.listBlobs(locked.sessionId)).filter((hash) => !keep.has(hash));
  await forEachLimited(unreferenced, 8, (hash) => locked.deleteBlob(hash));
  return unreferenced.length;
}
