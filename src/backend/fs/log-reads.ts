// Reads of the log by offset, with synchronous calls: each at most a chunk (64 KiB, 256 KiB for a search ahead),
// which the page cache serves in microseconds, where the thread pool's round trip of an asynchronous read cost more
// than the read, several times over on a machine whose idle threads are slow to wake (docs/ARCHITECTURE.md,
// "Batched file work"). A loop of such reads lets the event loop turn between them (time-slices.ts).
import { fstatSync, readSync } from "node:fs";

/** An open file read by offset: a FileHandle, or a descriptor opened with synchronous calls. */
export interface OpenFile {
  readonly fd: number;
}

/** Reads up to `length` bytes at `position` into `buffer` from `offset`; returns how many came (0: the end). */
export function readAt(file: OpenFile, buffer: Uint8Array, offset: number, length: number, position: number): number {
  return readSync(file.fd, buffer, offset, length, position);
}

/** The file's size now. */
export function sizeOf(file: OpenFile): number {
  return fstatSync(file.fd).size;
}
