import { closeSync, constants, fstatSync, readSync } from "node:fs";
import { openSync } from "../../core/named-fs.js";

const MAX_GITIGNORE_BYTES = 1024 * 1024;

/** A `.gitignore`'s text, read without following a link (it could lead outside); undefined if not a plain file. */
export function readGitignore(absolute: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(absolute, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > MAX_GITIGNORE_BYTES) return undefined;
    const buffer = Buffer.alloc(info.size);
    let read = 0;
    while (read < info.size) {
      const n = readSync(fd, buffer, read, info.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read).toString("utf8");
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
