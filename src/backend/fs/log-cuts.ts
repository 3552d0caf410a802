import { closeSync, constants, statSync, writeSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { openStoreFile, openStoreFileNow, READ } from "./store-files.js";

// A truncation cuts the log in place (one ftruncate: its cost follows nothing), so a lock-free reader
// holding the log open could read bytes from before the cut and then bytes appended after it, glued into
// one view that never existed. Each in-place cut therefore adds one record to `events.cuts` beside the
// log, after the ftruncate and before anything is appended: the byte offset from which the log changed.
// A reader looks at the file's size after each read (one cached stat); a change means the bytes it just
// read may be from after a cut, and the records since say where (docs/ARCHITECTURE.md, "On disk").

/** One record: the offset in 16 digits and a newline, so records never need a parser to be found. */
const RECORD_BYTES = 17;
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT;
/** Records read at one look: about a megabyte of them, far more than the cuts during one read of the log. */
const MAX_RECORDS_READ = 60_000;

/** The cut record's size: it only grows, by one record per cut. 0 when there is none. */
export function cutMark(path: string): number {
  try {
    return statSync(path).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
}

/**
 * Records that the log changed from byte `offset` on. Not fsynced: only readers reading now need it,
 * and after a crash every reader opens the log afresh. Synchronous calls: 17 bytes appended, where the four
 * round trips of the asynchronous form cost more (docs/ARCHITECTURE.md, "Batched file work").
 */
export function recordCut(sessionId: string, path: string, offset: number): void {
  const fd = openStoreFileNow(sessionId, path, APPEND);
  try {
    writeSync(fd, `${String(offset).padStart(RECORD_BYTES - 1, "0")}\n`);
  } finally {
    closeSync(fd);
  }
}

/**
 * Cuts the log open in `fh` at byte `offset` in place, recorded before the ftruncate and again after it: a
 * reader that took its mark between the first record and the ftruncate still sees the second. Every in-place
 * cut goes through here, not only a rewind's: the next lock holder's cut of a torn line or an unfinished batch,
 * and an append taking back what it wrote, are followed by appends at the same offsets too, which a paused
 * reader would glue to what it read before (docs/ARCHITECTURE.md, "On disk").
 */
export async function cutLog(sessionId: string, cutsFile: string, fh: FileHandle, offset: number): Promise<void> {
  recordCut(sessionId, cutsFile, offset);
  await fh.truncate(offset); // through the pool: a cut of a large log frees many blocks, which can take a while
  await fh.datasync();
  recordCut(sessionId, cutsFile, offset);
}

/**
 * The lowest offset any cut recorded after `mark` (an earlier {@link cutMark}) changed the log from, and
 * the mark that includes them. A record that is not whole or not a number (torn, or written by hand)
 * counts as a cut at 0: every byte read may have changed.
 */
export async function firstChangedSince(
  sessionId: string,
  path: string,
  mark: number,
): Promise<{ changedFrom: number; mark: number }> {
  const fh = await openStoreFile(sessionId, path, READ);
  try {
    const size = (await fh.stat()).size;
    if (size <= mark) return { changedFrom: 0, mark: size }; // replaced by a shorter file: trust nothing
    // More records than any run of rewinds during one read writes (a file grown by hand, gigabytes of it):
    // trust nothing rather than read it all into memory (docs/ARCHITECTURE.md, "On disk").
    if (size - mark > MAX_RECORDS_READ * RECORD_BYTES) return { changedFrom: 0, mark: size };
    const bytes = Buffer.alloc(size - mark);
    const { bytesRead } = await fh.read(bytes, 0, bytes.length, mark);
    let lowest = Number.POSITIVE_INFINITY;
    for (const text of bytes.toString("latin1", 0, bytesRead).split("\n").slice(0, -1)) {
      const offset = /^\d{16}$/.test(text) ? Number(text) : 0;
      lowest = Math.min(lowest, offset);
    }
    if (mark % RECORD_BYTES !== 0 || bytesRead % RECORD_BYTES !== 0 || !Number.isFinite(lowest)) lowest = 0;
    return { changedFrom: lowest, mark: mark + bytesRead };
  } finally {
    await fh.close();
  }
}
