import type { StorageBackend } from "../backend/types.js";
import type { StoredEvent } from "../core/events.js";

/**
 * The events a rewind cut from the log, kept beside it so `undoRewind` can put them back.
 * Named after the marker that removed them; the newest `keepUndo` are kept.
 */
export interface RewindArchive {
  markerSequence: number;
  events: StoredEvent[];
}

const PREFIX = "rewind-archive-";

export function archiveName(markerSequence: number): string {
  return `${PREFIX}${markerSequence}`;
}

/** Whether a side record's name is a rewind archive's. */
export function isArchiveName(name: string): boolean {
  return name.startsWith(PREFIX);
}

/** Names of the archives a session holds, newest (highest marker) first. */
export async function listArchives(backend: StorageBackend, sessionId: string): Promise<string[]> {
  const names = (await backend.listRecords(sessionId)).filter((n) => n.startsWith(PREFIX));
  return names.sort((a, b) => Number(b.slice(PREFIX.length)) - Number(a.slice(PREFIX.length)));
}

export async function readArchive(
  backend: StorageBackend,
  sessionId: string,
  name: string,
): Promise<RewindArchive | undefined> {
  return (await backend.readRecord(sessionId, name)) as RewindArchive | undefined;
}
