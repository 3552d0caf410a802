import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, type Stats } from "node:fs";
import { lstat, open, type FileHandle } from "node:fs/promises";
import { StoreTamperedError } from "../../core/errors.js";

// Every file of a session folder is opened through here (docs/ARCHITECTURE.md, "Confinement"): never
// through a symlink (O_NOFOLLOW), never blocking on a FIFO or a device (O_NONBLOCK, which changes nothing
// for a regular file), and refused unless the descriptor is a regular file. A planted link or FIFO is
// STORE_TAMPERED, not a read or a write somewhere else, and not a call that never returns.

export const READ = constants.O_RDONLY;
/** Like "a+": read, append, create. */
export const READ_APPEND = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT;

/** Opens a file of the store with `flags`, refusing a symlink in its place and anything not a regular file. */
export async function openStoreFile(sessionId: string, path: string, flags: number, mode = 0o644): Promise<FileHandle> {
  return (await openChecked(sessionId, path, flags, mode)).handle;
}

/** {@link openStoreFile}, with what the check's fstat said of the file (its size and inode, for the log). */
export async function openStoreFileStat(
  sessionId: string,
  path: string,
  flags: number,
): Promise<{ handle: FileHandle; info: Stats }> {
  return openChecked(sessionId, path, flags);
}

/** {@link openStoreFile} for reading, or undefined when there is no such file (a log or copy not made yet). */
export async function openStoreFileIfThere(sessionId: string, path: string): Promise<FileHandle | undefined> {
  try {
    return await openStoreFile(sessionId, path, READ);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** {@link openStoreFile}, with the size its check saw. */
async function openChecked(
  sessionId: string,
  path: string,
  flags: number,
  mode = 0o644,
): Promise<{ handle: FileHandle; size: number; info: Stats }> {
  let handle: FileHandle;
  try {
    handle = await open(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, mode);
  } catch (error) {
    throw openRefused(sessionId, path, error);
  }
  try {
    // At once: the descriptor is open, and an fstat costs less than a round trip through the pool.
    const info = fstatSync(handle.fd);
    if (!info.isFile()) throw new StoreTamperedError(sessionId, `${path} is not a regular file`);
    return { handle, size: info.size, info };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * {@link openStoreFile} with synchronous calls, for a few bytes written or read at once: the descriptor, to be
 * closed with closeSync.
 */
export function openStoreFileNow(sessionId: string, path: string, flags: number, mode = 0o644): number {
  let fd: number;
  try {
    fd = openSync(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, mode);
  } catch (error) {
    throw openRefused(sessionId, path, error);
  }
  try {
    if (!fstatSync(fd).isFile()) throw new StoreTamperedError(sessionId, `${path} is not a regular file`);
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** What an open of a store file that failed means: a link or a FIFO in its place is STORE_TAMPERED. */
function openRefused(sessionId: string, path: string, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ELOOP") return new StoreTamperedError(sessionId, `${path} is a symlink`, { cause: error });
  if (code === "ENXIO") return new StoreTamperedError(sessionId, `${path} is a FIFO or socket`, { cause: error });
  return error;
}

/**
 * {@link readStoreFile} with synchronous calls, for a file of at most `syncBytes` (undefined, having read
 * nothing, for a larger one): its five calls take less time than the thread-pool round trips of their async
 * forms, which were most of reading a rewind's 1,000 small blobs (docs/ARCHITECTURE.md, "Batched file work").
 */
export function readStoreFileNow(
  sessionId: string,
  path: string,
  maxBytes: number,
  syncBytes: number,
): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, READ | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw openRefused(sessionId, path, error);
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new StoreTamperedError(sessionId, `${path} is not a regular file`);
    const size = Math.min(info.size, maxBytes);
    if (size > syncBytes) return undefined;
    const bytes = Buffer.allocUnsafe(size);
    let filled = 0;
    while (filled < size) {
      const bytesRead = readSync(fd, bytes, filled, size - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return filled === size ? bytes : bytes.subarray(0, filled);
  } finally {
    closeSync(fd);
  }
}

/**
 * The whole of a small store file (a session's own, a record) with synchronous calls, or through the thread pool
 * when it is larger than a few pages: a rewind reads several, each four round trips the other way.
 */
export async function readSmallStoreFile(sessionId: string, path: string): Promise<Buffer> {
  return (
    readStoreFileNow(sessionId, path, Number.POSITIVE_INFINITY, SMALL_FILE_BYTES) ?? readStoreFile(sessionId, path)
  );
}

const SMALL_FILE_BYTES = 64 * 1024;

/**
 * The whole of a store file (ENOENT when there is none), opened as {@link openStoreFile} does. Only for a
 * file never changed in place (a blob: written once, renamed into place): it reads the size the open's
 * check saw, in one read where `readFile` would stat again and read once more to find the end.
 * A file cut short meanwhile gives fewer bytes, which the caller's hash check refuses.
 */
export async function readStoreFile(
  sessionId: string,
  path: string,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<Buffer> {
  const { handle, size: whole } = await openChecked(sessionId, path, READ);
  const size = Math.min(whole, maxBytes); // a prefix when asked: a planted giant is never read whole
  try {
    const bytes = Buffer.allocUnsafe(size);
    let filled = 0;
    while (filled < size) {
      const { bytesRead } = await handle.read(bytes, filled, size - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return filled === size ? bytes : bytes.subarray(0, filled);
  } finally {
    await handle.close();
  }
}

/**
 * Refuses a folder of the store (blobs/, a shard, records/) that is a symlink or not a folder: writing,
 * listing or deleting through it would reach wherever it points. Nothing there is fine (made on demand):
 * false says so.
 */
export async function checkStoreFolder(sessionId: string, path: string): Promise<boolean> {
  let info;
  try {
    info = await lstat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  if (info.isSymbolicLink()) throw new StoreTamperedError(sessionId, `${path} is a symlink, not a folder`);
  if (!info.isDirectory()) throw new StoreTamperedError(sessionId, `${path} is not a folder`);
  return true;
}

/** {@link checkStoreFolder} without a thread-pool round trip, for the synchronous blob write. */
export function checkStoreFolderSync(sessionId: string, path: string): boolean {
  const info = lstatSync(path, { throwIfNoEntry: false });
  if (info === undefined) return false;
  if (info.isSymbolicLink()) throw new StoreTamperedError(sessionId, `${path} is a symlink, not a folder`);
  if (!info.isDirectory()) throw new StoreTamperedError(sessionId, `${path} is not a folder`);
  return true;
}
