import { randomBytes } from "node:crypto";
import { closeSync, constants, fchmodSync, fsync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
// A workspace folder's name may hold bytes that are not UTF-8 (docs/ARCHITECTURE.md, "Names and depths").
import { openSync as openNamedSync } from "./named-fs.js";

/** fsync(2) of an open descriptor, through the thread pool: it waits for the disk. */
export const fsyncFd = promisify(fsync);

/**
 * fsync a file or a folder, opened by name: its bytes, or a rename or create inside it, survive power loss. The
 * open and the close are synchronous (microseconds); only the fsync, which waits for the disk, goes to the thread
 * pool: three round trips were one (docs/ARCHITECTURE.md, "Batched file work").
 */
export async function fsyncPath(path: string): Promise<void> {
  // O_NONBLOCK: a FIFO put in a path's place would otherwise hold the open (and now the event loop) until a writer.
  const fd = openNamedSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsync a directory so a rename or create inside it survives power loss. */
export const fsyncDir: (dir: string) => Promise<void> = fsyncPath;

/** A temp name beside `file`, so the final rename stays on one filesystem (and is atomic). */
export function tempPathFor(file: string): string {
  return join(dirname(file), `.tmp-${basename(file)}-${randomBytes(6).toString("hex")}`);
}

export interface AtomicWriteOptions {
  /** fsync the data and the folder: the write survives power loss, not only a process crash. @default true */
  durable?: boolean;
  mode?: number;
  /**
   * Makes the temp's bytes durable together with other writes the caller needs durable with it, in one wait:
   * by a syncfs of its filesystem that covers them all, or by running `syncTemp` (the temp's own fsync) at the
   * same time as theirs. Either way the temp is durable when it resolves.
   */
  syncData?: (syncTemp: () => Promise<void>) => Promise<void>;
}

/**
 * Replaces `file` with `data` so a reader (or a crash) sees the old bytes or the new, never a
 * mix: write a temp file, fsync it, rename it over, fsync the folder.
 */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const durable = options.durable ?? true;
  if (data.length <= AT_ONCE_MAX_BYTES) return writeSmallAtomic(file, data, { ...options, durable });
  const temp = tempPathFor(file);
  const fh = await open(temp, "wx", options.mode ?? 0o644);
  try {
    try {
      await fh.writeFile(data);
      if (options.mode !== undefined) await fh.chmod(options.mode); // open()'s mode is filtered by the umask
      if (durable) await (options.syncData ? options.syncData(() => fh.sync()) : fh.sync());
    } finally {
      await fh.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  if (durable) await fsyncDir(dirname(file));
}

/**
 * Up to this many bytes (a string's length counts UTF-16 units: at most three bytes each), the temp is made,
 * written, closed and renamed with synchronous calls, and only the fsyncs of a durable write go to the thread
 * pool: a record, an intent, a session's own file took up to nine round trips each (docs/ARCHITECTURE.md,
 * "Batched file work"). A durable write's rename comes after the temp's fsync, so it starts no writing out of its
 * bytes (ext4's auto_da_alloc); a write that is not durable has at most these few pages to start.
 */
const AT_ONCE_MAX_BYTES = 16 * 1024;

async function writeSmallAtomic(file: string, data: string | Uint8Array, options: AtomicWriteOptions): Promise<void> {
  const bytes = typeof data === "string" ? Buffer.from(data) : data;
  const temp = tempPathFor(file);
  const fd = openSync(temp, "wx", options.mode ?? 0o644);
  try {
    try {
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
      if (options.mode !== undefined) fchmodSync(fd, options.mode); // open()'s mode is filtered by the umask
      const syncTemp = () => fsyncFd(fd);
      if (options.durable) await (options.syncData ? options.syncData(syncTemp) : syncTemp());
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  if (options.durable) await fsyncDir(dirname(file));
}
