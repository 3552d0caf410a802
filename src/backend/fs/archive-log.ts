import { createHash } from "node:crypto";
import { readSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { tempPathFor, writeFileAtomic } from "../../core/atomic-file.js";
import type { ArchivedLog } from "../types.js";
import { openStoreFileIfThere } from "./store-files.js";

// A rewind keeps the part of the log it cuts, for its undo, as a copy of those bytes beside the records
// (`records/rewind-archive-<marker>.jsonl`): copied in fixed-size chunks, never parsed or held whole, so a
// cut of 999k events costs the memory of one chunk (docs/ARCHITECTURE.md, "Blobs", archives).

const CHUNK = 256 * 1024;
const NEWLINE = 0x0a;

/**
 * Copies bytes [from, to) of the open log to `target`: a temp file beside it, renamed over, so a process
 * crash leaves no copy or a whole one (a temp a killed copy left is swept as a leftover, leftovers.ts). Not
 * fsynced, as the archive record never was: a power loss can cost the undo, never the rewind (the rewind
 * checks a copy it measures again against the events it cut; docs/ARCHITECTURE.md, "Rewind intent"), and a
 * 1-file rewind waits for the disk no more often than before byte-range archives. Returns the copy's length,
 * sha256 and line count.
 */
export async function copyLogRange(log: FileHandle, from: number, to: number, target: string): Promise<ArchivedLog> {
  if (to - from <= AT_ONCE_MAX_BYTES) return copySmallRange(log.fd, from, to, target);
  const temp = tempPathFor(target);
  const hash = createHash("sha256");
  let events = 0;
  try {
    const out = await open(temp, "wx", 0o644);
    try {
      const buf = Buffer.allocUnsafe(CHUNK);
      for (let pos = from; pos < to; ) {
        const { bytesRead } = await log.read(buf, 0, Math.min(buf.length, to - pos), pos);
        if (bytesRead === 0) throw new Error(`the log ended at byte ${pos} while copying it up to ${to}`);
        const piece = buf.subarray(0, bytesRead);
        hash.update(piece);
        for (let nl = piece.indexOf(NEWLINE); nl !== -1; nl = piece.indexOf(NEWLINE, nl + 1)) events++;
        for (let written = 0; written < bytesRead; )
          written += (await out.write(piece, written, bytesRead - written)).bytesWritten;
        pos += bytesRead;
      }
    } finally {
      await out.close();
    }
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
  return { bytes: to - from, sha256: hash.digest("hex"), events };
}

/**
 * A cut of up to this many bytes (a few events: the common rewind) is read at once and written as a small file is
 * (writeFileAtomic): the read, the temp's open, write and close and the rename were seven round trips through the
 * pool, each costing more than the call (docs/ARCHITECTURE.md, "Batched file work").
 */
const AT_ONCE_MAX_BYTES = 64 * 1024;

async function copySmallRange(log: number, from: number, to: number, target: string): Promise<ArchivedLog> {
  const bytes = Buffer.allocUnsafe(to - from);
  for (let filled = 0; filled < bytes.length; ) {
    const read = readSync(log, bytes, filled, bytes.length - filled, from + filled);
    if (read === 0) throw new Error(`the log ended at byte ${from + filled} while copying it up to ${to}`);
    filled += read;
  }
  await writeFileAtomic(target, bytes, { durable: false }); // not fsynced: see copyLogRange
  let events = 0;
  for (let nl = bytes.indexOf(NEWLINE); nl !== -1; nl = bytes.indexOf(NEWLINE, nl + 1)) events++;
  return { bytes: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex"), events };
}

/**
 * The bytes of an archived log range, chunk by chunk; nothing when there is no such file. One buffer is read
 * into again and again (a chunk is good until the next is asked for): a fresh megabyte per read left the
 * memory of an undo growing with the cut, freed only by lazy garbage collection
 * (bench "undoRewind: cut 999,999 of 1,000,000 events put back, peak RSS").
 */
export async function* readArchivedLogFile(path: string, signal?: AbortSignal): AsyncGenerator<Buffer> {
  // The file lies in a session's records/ folder: the folder above is the session's, named by its id.
  const sessionId = basename(dirname(dirname(path)));
  const fh = await openStoreFileIfThere(sessionId, path);
  if (fh === undefined) return;
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    for (let pos = 0; ; ) {
      signal?.throwIfAborted();
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) return;
      pos += bytesRead;
      yield buf.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}
