import { closeSync } from "node:fs";

// A pack's segments kept open for reading a moment after their last read (docs/ARCHITECTURE.md, "Small blobs
// packed", readers). A rewind reads one before-blob per file it restores, one after another: each read looked at
// blobs/ and blobs/pack/, opened the segment, checked it was a regular file and closed it again, five calls around
// the one that reads. Kept open, a segment is read with that one call.
//
// A descriptor is only good for the index it was opened under (`owner`): an index is dropped and made again when
// the pack's files changed in a way the places it holds do not survive (a compaction, a segment gone), and a reader
// of an older index is closed at its next use instead of read. A segment is only ever appended to, so what was read
// at a place once is still there through the same descriptor; a compaction elsewhere renames a new file in and
// deletes the old one, whose bytes the descriptor still reads as they were, and a read that finds its entry not
// what the index says makes the caller drop the index (blob-pack.ts, readPacked).

/** Closed this long after the last read of any of them: a moment, not a session's life. */
const IDLE_MS = 50;
/** A pack has a few segments at most between compactions; past this many, the one read longest ago is closed. */
const MAX_OPEN = 4;

interface Reader {
  fd: number;
  owner: object;
}

const readers = new Map<string, Reader>();
let idle: NodeJS.Timeout | undefined;

/**
 * Runs `read` with a descriptor of the segment at `path`: the one kept from an earlier read under the same `owner`,
 * or one `open` gives (which makes its own checks). The descriptor stays open for the next read. A kept one that
 * fails to read is closed and the read made once more on a new one: what failed was that descriptor, or the new
 * one fails the same way and says so.
 */
export function readSegment<T>(path: string, owner: object, open: () => number, read: (fd: number) => T): T {
  const kept = readers.get(path);
  if (kept && kept.owner === owner) {
    readers.delete(path); // put back at the end: read last
    readers.set(path, kept);
    keepBriefly();
    try {
      return read(kept.fd);
    } catch {
      closeReader(path, kept);
    }
  } else if (kept) closeReader(path, kept);
  const reader = { fd: open(), owner };
  if (readers.size >= MAX_OPEN) {
    const [oldest, first] = readers.entries().next().value!;
    closeReader(oldest, first);
  }
  readers.set(path, reader);
  keepBriefly();
  return read(reader.fd);
}

/** Closes the kept segments under `folder` (a pack compacted or a session removed), or every one. */
export function closeSegmentReaders(folder?: string): void {
  for (const [path, reader] of readers)
    if (folder === undefined || path.startsWith(`${folder}/`)) closeReader(path, reader);
}

function keepBriefly(): void {
  if (idle) idle.refresh();
  else {
    idle = setTimeout(() => {
      idle = undefined;
      closeSegmentReaders();
    }, IDLE_MS);
    idle.unref(); // never what keeps a process alive
  }
}

function closeReader(path: string, reader: Reader): void {
  readers.delete(path);
  try {
    closeSync(reader.fd);
  } catch {
    // a descriptor opened for reading: closing it loses nothing
  }
}
