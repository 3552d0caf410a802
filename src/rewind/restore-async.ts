import { closeSync, constants } from "node:fs";
import { fsyncFd } from "../core/atomic-file.js";
import { dirname } from "node:path";
import { lchown, lstat, mkdir, open, openSync, rename, stat, symlink, unlink } from "../core/named-fs.js";
import type { HeldWorkspace } from "../checkpoint/held-workspace.js";
import { removeEntry } from "../checkpoint/remove-entry.js";

// The asynchronous form of one path's restore (a file, a link, a folder and its mode) and of a file's fsync:
// every case handled and every error named, one thread-pool round trip per call. The common case of a file is
// done by the synchronous form first (restore-now.ts), which hands this form whatever it does not handle
// (docs/ARCHITECTURE.md, "Batched file work").

/** Clears the way for a file or a link (a folder there goes, contents and all), or for a folder (a non-folder goes). */
async function clearFor(held: HeldWorkspace, path: string, where: string, keepDirectory: boolean): Promise<void> {
  let info;
  try {
    info = await lstat(where);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    return;
  }
  if (info.isDirectory() && !keepDirectory) {
    held.forget(path);
    await removeEntry(where);
  }
  if (!info.isDirectory() && keepDirectory) await unlink(where).catch(ignoreMissing);
}

/**
 * Gives the new entry the owner and group its record names, or, for a record without them (tapes written before
 * owners were recorded), those of the name it replaces or, where nothing is, of the folder it is made in: a
 * harness running as root would otherwise make every file it restores root's. Only where the process may (root,
 * or its own uid: a group it is not in is left as it is).
 */
async function giveOwner(owner: Owned, where: string, chown: (uid: number, gid: number) => Promise<void>) {
  const uid = process.getuid?.();
  if (uid === undefined) return;
  let wanted = owner.uid === undefined ? undefined : { uid: owner.uid, gid: owner.gid ?? process.getgid!() };
  // The folder is named through its held descriptor (/proc/self/fd/N): stat follows that to the folder checked.
  wanted ??= await lstat(where).catch(() => stat(dirname(where)).catch(() => undefined));
  if (wanted === undefined || (wanted.uid === uid && wanted.gid === process.getgid?.())) return;
  if (uid !== 0 && wanted.uid !== uid) return;
  await chown(wanted.uid, wanted.gid).catch(() => undefined);
}

type Owned = { uid?: number | undefined; gid?: number | undefined };

/** Writes the bytes to a temp beside the file and renames it over; durable only once applyHeld syncs at the end. */
export async function restoreFile(
  held: HeldWorkspace,
  path: string,
  where: string,
  temp: string,
  bytes: Buffer,
  record: { mode: number } & Owned,
  unchanged: () => Promise<boolean>,
) {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const fh = await clearedFirst(temp, () => open(temp, flags, 0o600));
  try {
    try {
      await fh.writeFile(bytes);
      await giveOwner(record, where, (uid, gid) => fh.chown(uid, gid));
      // After writing (and chown, which clears set-id bits): open()'s mode is cut by the umask.
      await fh.chmod(record.mode);
    } finally {
      await fh.close();
    }
    // Looked at last, with the new bytes ready: the time left between the look and the rename is the least.
    if (!(await unchanged())) {
      await unlink(temp).catch(ignoreMissing);
      return;
    }
    await renameOver(held, path, temp, where); // replaces a symlink itself, never writes through it
  } catch (error) {
    await unlink(temp).catch(ignoreMissing);
    throw error;
  }
}

export async function restoreSymlink(
  held: HeldWorkspace,
  path: string,
  where: string,
  temp: string,
  record: { target: string } & Owned,
  unchanged: () => Promise<boolean>,
) {
  await clearedFirst(temp, () => symlink(record.target, temp));
  try {
    if (record.uid !== undefined) await giveOwner(record, where, (uid, gid) => lchown(temp, uid, gid));
    if (!(await unchanged())) {
      await unlink(temp).catch(ignoreMissing);
      return;
    }
    await renameOver(held, path, temp, where);
  } catch (error) {
    await unlink(temp).catch(ignoreMissing);
    throw error;
  }
}

/**
 * Renames the temp over the entry. A folder there cannot be replaced by a rename (EISDIR): it goes, contents
 * and all, and the rename is tried again. Looking first cost every restore an lstat.
 */
async function renameOver(held: HeldWorkspace, path: string, temp: string, where: string): Promise<void> {
  try {
    await rename(temp, where);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
    await clearFor(held, path, where, false);
    await rename(temp, where);
  }
}

/**
 * Makes the temp with `make` (exclusively: O_EXCL, or symlink, which never replaces). The name is this
 * operation's own ({@link TempNames}), so one found there is what a crashed run of the same operation left: it
 * is removed and the make tried again.
 */
async function clearedFirst<T>(temp: string, make: () => Promise<T>): Promise<T> {
  try {
    return await make();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    await removeEntry(temp); // a link there is removed, never followed
    return make();
  }
}

export async function restoreDirectory(
  held: HeldWorkspace,
  path: string,
  where: string,
  mode: number,
  owner: Owned,
): Promise<void> {
  await clearFor(held, path, where, true);
  await mkdir(where).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EEXIST") throw error;
  });
  await restoreMode(where, mode, owner);
}

/** Sets a folder's mode through a descriptor opened without following: a link swapped in is not chmod-ed through. */
export async function restoreMode(where: string, mode: number, owner: Owned): Promise<void> {
  const fh = await open(where, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    // A folder's owner only when its record names one (a folder kept in place keeps its own), where the process may.
    const now = owner.uid === undefined ? undefined : await fh.stat();
    const may = process.getuid?.() === 0 || owner.uid === process.getuid?.();
    if (now && may && (now.uid !== owner.uid || now.gid !== owner.gid))
      await fh.chown(owner.uid!, owner.gid ?? now.gid).catch(() => undefined);
    await fh.chmod(mode);
  } finally {
    await fh.close();
  }
}

/**
 * Fsyncs a restored file, never through a link (gone: nothing to do). Opened and closed with synchronous calls;
 * only the fsync, which waits for the disk, goes through the pool (docs/ARCHITECTURE.md, "Batched file work").
 */
export async function fsyncFile(where: string): Promise<void> {
  let fd: number;
  try {
    fd = openSync(where, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ELOOP") return; // replaced since (a later record, or racing code)
    throw error;
  }
  try {
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
}

/** A restored file whose folder a later record removed: nothing left to make durable. */
export function ignoreGone(error: NodeJS.ErrnoException): void {
  if (error.code !== "ENOENT" && error.code !== "ENOTDIR") throw error;
}

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== "ENOENT") throw error;
}
