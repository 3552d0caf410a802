import type { LockedSession, StorageBackend } from "../backend/types.js";
import type { StoredEvent } from "../core/events.js";
import { forEachLimited, mapLimited } from "../core/bounded-concurrency.js";
import { referencedBlobs } from "./references.js";
import { archivedEvents, listArchives, readArchive } from "./archives.js";
import { addRootReferences, dropRootReferences } from "./reference-roots.js";
import { type HorizonMark, isDroppedCheckpoint, laterHorizon, readHorizonMark } from "./retention-horizon.js";

export interface UnreferencedOptions {
  /** Events about to be appended: what they reference is kept. */
  alsoKeep?: readonly StoredEvent[];
  /** Blobs kept whatever references them (those of an archive being made). */
  alsoKeepBlobs?: readonly string[];
  /** Archives about to be dropped: what only they reference counts as unreferenced. */
  ignoreArchives?: readonly string[];
  /** A horizon about to be recorded, when above the stored one: checkpoints through it keep nothing. */
  horizon?: number | HorizonMark;
  /** Read the log only through this sequence: as a cut about to be made will leave it. */
  logThrough?: number;
  /** Look only at these blobs (the ones an operation may have orphaned); none to look at reads nothing. */
  candidates?: readonly string[];
  /**
   * With `candidates`: tells whether a blob is there, so that only the candidates are looked up instead
   * of listing every blob (a workspace index keeps one per tracked file: 10k files, a 10k-entry listing).
   */
  exists?: (hash: string) => Promise<boolean>;
}

/**
 * The blobs nothing references: no event of the live log, no event about to be appended, no
 * event in a kept rewind archive (so an undo can still restore them), no reference root (the
 * workspace index); checkpoints behind the retention horizon count for nothing. Call it under the lock, so
 * no capture can be between writing a blob and indexing it.
 */
export async function findUnreferencedBlobs(
  backend: StorageBackend,
  sessionId: string,
  options: UnreferencedOptions = {},
): Promise<string[]> {
  if (options.candidates?.length === 0) return [];
  const keep = referencedBlobs(options.alsoKeep ?? []);
  for (const hash of options.alsoKeepBlobs ?? []) keep.add(hash);
  const { candidates, exists } = options;
  if (candidates && exists) return unreferencedCandidates(backend, sessionId, { ...options, candidates, exists }, keep);
  // Checkpoints retention dropped keep nothing alive (docs/ARCHITECTURE.md, "Retention").
  const horizon = laterHorizon(await readHorizonMark(backend, sessionId), options.horizon);
  for await (const event of backend.readEvents(sessionId, logRange(options)))
    if (!isDroppedCheckpoint(event, horizon)) referencedBlobs([event], keep);
  await addRootReferences(backend, sessionId, keep);
  for (const name of await listArchives(backend, sessionId)) {
    if (options.ignoreArchives?.includes(name)) continue;
    const archive = await readArchive(backend, sessionId, name);
    if (archive)
      for await (const event of archivedEvents(backend, sessionId, name, archive))
        if (!isDroppedCheckpoint(event, horizon)) referencedBlobs([event], keep);
  }
  const looked = options.candidates ? new Set(options.candidates) : undefined;
  return (await backend.listBlobs(sessionId)).filter((hash) => !keep.has(hash) && (looked?.has(hash) ?? true));
}

/**
 * {@link findUnreferencedBlobs} for a few candidates: each holder of references is asked in turn, cheapest
 * first — the events about to be appended, the reference roots (the workspace index, held in memory), the
 * log, the kept archives — and the look stops as soon as every candidate is known to be kept. A rewind of
 * a shell command's file then reads no log at all: the index points at the bytes it put back. Only a
 * candidate that every holder was read in full without naming is unreferenced (docs/ARCHITECTURE.md, "Blobs").
 */
async function unreferencedCandidates(
  backend: StorageBackend,
  sessionId: string,
  options: UnreferencedOptions & { candidates: readonly string[]; exists: (hash: string) => Promise<boolean> },
  keep: ReadonlySet<string>,
): Promise<string[]> {
  const left = new Set(options.candidates.filter((hash) => !keep.has(hash)));
  if (left.size > 0) await dropRootReferences(backend, sessionId, left);
  if (left.size > 0) {
    const horizon = laterHorizon(await readHorizonMark(backend, sessionId), options.horizon);
    for await (const event of backend.readEvents(sessionId, logRange(options))) {
      if (!isDroppedCheckpoint(event, horizon)) for (const hash of referencedBlobs([event])) left.delete(hash);
      if (left.size === 0) break;
    }
    for (const name of left.size > 0 ? await listArchives(backend, sessionId) : []) {
      if (options.ignoreArchives?.includes(name)) continue;
      const archive = await readArchive(backend, sessionId, name);
      if (!archive) continue;
      for await (const event of archivedEvents(backend, sessionId, name, archive)) {
        if (!isDroppedCheckpoint(event, horizon)) for (const hash of referencedBlobs([event])) left.delete(hash);
        if (left.size === 0) break;
      }
    }
  }
  const unreferenced = [...left];
  const there = await mapLimited(unreferenced, 8, options.exists);
  return unreferenced.filter((_, i) => there[i]);
}

/** The part of the log that counts: all of it, or as a cut about to be made will leave it. */
function logRange(options: UnreferencedOptions): { toSequence?: number } {
  return options.logThrough === undefined ? {} : { toSequence: options.logThrough };
}

/** Deletes the blobs nothing references any more (see {@link findUnreferencedBlobs}). Returns how many. */
export async function pruneUnreferencedBlobs(
  backend: StorageBackend,
  locked: LockedSession,
  alsoKeep: readonly StoredEvent[] = [],
  candidates?: readonly string[],
  alsoKeepBlobs: readonly string[] = [],
): Promise<number> {
  const unreferenced = await findUnreferencedBlobs(backend, locked.sessionId, {
    alsoKeep,
    alsoKeepBlobs,
    ...(candidates && { candidates, exists: (hash: string) => locked.hasBlob(hash) }),
  });
  await deleteBlobsOf(locked, unreferenced);
  return unreferenced.length;
}

/** Deletes `hashes`: in one call where the backend batches it (`deleteBlobs`), else eight at a time. */
export async function deleteBlobsOf(locked: LockedSession, hashes: readonly string[]): Promise<void> {
  if (locked.deleteBlobs) await locked.deleteBlobs(hashes);
  else await forEachLimited(hashes, 8, (hash) => locked.deleteBlob(hash));
}
