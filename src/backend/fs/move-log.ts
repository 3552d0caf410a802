import type { FileHandle } from "node:fs/promises";
import { open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { fsyncDir, tempPathFor } from "../../core/atomic-file.js";
import { openStoreFile, READ } from "./store-files.js";

/**
 * After taking a stale lock over: gives the log a new inode, so the old holder — which may be
 * alive (a blocked event loop, a stopped process) and still has the log open — can no longer
 * write to the live log. Its next append finds the path on another inode and fails
 * LOCK_COMPROMISED instead of acknowledging (docs/ARCHITECTURE.md, "Lock lease").
 *
 * Copy, rename the copy over the log, then copy whatever reached the old inode meanwhile: an
 * append the old holder acknowledged was checked against the path before our rename, so it is
 * complete in the old inode by then and the second pass picks it up. At every moment the path
 * names a whole log, so a crash here loses nothing (it leaves at most a temp file behind).
 */
export async function moveLogToNewInode(sessionId: string, file: string): Promise<void> {
  const old = await openStoreFile(sessionId, file, READ);
  const temp = tempPathFor(file);
  try {
    const copy = await open(temp, "wx", 0o644);
    try {
      let copied = await copyFrom(old, copy, 0);
      await copy.sync();
      await rename(temp, file);
      copied += await copyFrom(old, copy, copied);
      await copy.sync();
    } finally {
      await copy.close();
    }
    await fsyncDir(dirname(file));
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  } finally {
    await old.close();
  }
}

/** Appends `from`'s bytes from `position` to its end onto `to`; returns how many. */
async function copyFrom(from: FileHandle, to: FileHandle, position: number): Promise<number> {
  const buf = Buffer.allocUnsafe(256 * 1024);
  let total = 0;
  for (;;) {
    const { bytesRead } = await from.read(buf, 0, buf.length, position + total);
    if (bytesRead === 0) return total;
    let written = 0;
    while (written < bytesRead) written += (await to.write(buf, written, bytesRead - written)).bytesWritten;
    total += bytesRead;
  }
}
