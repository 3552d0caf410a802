// Reads of the log by offset, with synchronous calls: each at most a chunk (64 KiB, 256 KiB for a search ahead),
// which the page cache serves in microseconds, where the thread pool's round trip of an asynchronous read cost more
// than the read, several times over on a machine whose idle threads are slow to wake (docs/ARCHITECTURE.md,
// "Batched file work"). A loop of such reads lets the event loop turn between them (time-slices.ts).
import { closeSync, fstatSync, readSync } from "node:fs";

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

// A reader its caller dropped half way (an iterator never finished nor returned) never reaches its `finally`:
// its descriptor is closed once the reader is collected, as Node does for a FileHandle, instead of leaking.
const dropped = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // closed already
  }
});

/** A descriptor opened with synchronous calls, closed by {@link closeOwned} or, if its reader is dropped, by the GC. */
export function owned(fd: number): OpenFile {
  const file = { fd };
  dropped.register(file, fd, file);
  return file;
}

/** Closes a descriptor from {@link owned}, and forgets it, so the GC never closes its number again. */
export function closeOwned(file: OpenFile): void {
  dropped.unregister(file);
  closeSync(file.fd);
}
