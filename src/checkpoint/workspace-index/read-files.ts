import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, read, readSync, type BigIntStats } from "node:fs";
import { openSync } from "../../core/named-fs.js";
import { throwIfOutOfDescriptors } from "../../core/out-of-descriptors.js";

/**
 * What reading one workspace file found: gone (vanished since the walk), unreadable, or its stat through the
 * descriptor that read it, with its bytes and their sha256 when it is a regular file within `maxBytes`.
 */
export type FileRead = { gone: true } | { unreadable: true } | { stat: BigIntStats; bytes?: Buffer; hash?: string };

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
// Reads of small files are synchronous (a thread-pool round trip per open, stat, read and close
// costs more than the read); past this size a file is read asynchronously, so the loop keeps turning.
const SYNC_READ_MAX = 256 * 1024;

/**
 * Reads one workspace file: opened without following a link, stat'ed through the descriptor (so what is recorded as
 * "unchanged since" matches the bytes hashed), read whole and hashed.
 */
export async function readWorkspaceFile(absolute: string, maxBytes: number): Promise<FileRead> {
  let fd: number;
  try {
    fd = openSync(absolute, OPEN_FLAGS);
  } catch (error) {
    throwIfOutOfDescriptors(error);
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? { gone: true } : { unreadable: true };
  }
  try {
    const stat = fstatSync(fd, { bigint: true });
    if (!stat.isFile() || stat.size > BigInt(maxBytes)) return { stat };
    const size = Number(stat.size);
    const bytes = size <= SYNC_READ_MAX ? readWholeSync(fd, size) : await readWhole(fd, size);
    return { stat, bytes, hash: createHash("sha256").update(bytes).digest("hex") };
  } catch {
    return { unreadable: true };
  } finally {
    closeSync(fd);
  }
}

function readWholeSync(fd: number, size: number): Buffer {
  const buffer = Buffer.allocUnsafe(size);
  let total = 0;
  while (total < size) {
    const n = readSync(fd, buffer, total, size - total, total);
    if (n === 0) break;
    total += n;
  }
  return total === size ? buffer : buffer.subarray(0, total);
}

async function readWhole(fd: number, size: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(size);
  let total = 0;
  while (total < size) {
    const n = await readAsync(fd, buffer, total, size - total, total);
    if (n === 0) break;
    total += n;
  }
  return total === size ? buffer : buffer.subarray(0, total);
}

function readAsync(fd: number, buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) =>
    read(fd, buffer, offset, length, position, (error, n) => (error ? reject(error) : resolve(n))),
  );
}
