import { closeSync, constants, fchmodSync, fchownSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { lstatSync, openSync, renameSync, statSync, unlinkSync } from "../core/named-fs.js";

/**
 * The synchronous form of a file's restore and of a deletion, for the common case: many paths acted on in one
 * turn of the event loop, through folders already held, instead of a thread-pool round trip per call (about
 * twenty per file: docs/ARCHITECTURE.md, "Batched file work"). Each does the same steps with the same checks
 * as the asynchronous form in apply-files.ts; whatever is not the common case (a temp name already taken, a
 * folder where the file goes, a folder to delete, a path found changed since the plan) returns "async" having
 * changed nothing, and the caller does that path the asynchronous way, which handles it.
 */
export type NowOutcome = "done" | "async";

const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Writes `bytes` to `temp` (exclusively, never through a link), gives it the owner of what it replaces and
 * `mode`, then, if `unchanged()` still says the path is as planned, renames it over `where`. A path found
 * changed is left as it is (the temp removed) for the asynchronous form.
 */
export function restoreFileNow(
  where: string,
  temp: string,
  bytes: Uint8Array,
  mode: number,
  unchanged: () => boolean,
): NowOutcome {
  let fd: number;
  try {
    fd = openSync(temp, CREATE_FLAGS, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return "async"; // a crashed run's temp: cleared there
    throw error;
  }
  try {
    try {
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
      keepOwnerNow(fd, where);
      fchmodSync(fd, mode); // after writing (and chown, which clears set-id bits): open()'s mode is cut by the umask
    } finally {
      closeSync(fd);
    }
    // Looked at last, with the new bytes ready: the time left between the look and the rename is the least.
    if (!unchanged()) {
      unlinkQuietly(temp);
      return "async"; // found changed: what to do about it is the asynchronous form's (onChanged)
    }
    try {
      renameSync(temp, where); // replaces a symlink itself, never writes through it
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "EISDIR" && code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
      unlinkQuietly(temp);
      return "async"; // a folder there: it goes, contents and all, the asynchronous way
    }
    return "done";
  } catch (error) {
    unlinkQuietly(temp);
    throw error;
  }
}

/** Deletes the file or link at `where` if `unchanged()`; a folder there is left to the asynchronous form. */
export function deleteNow(where: string, unchanged: () => boolean): NowOutcome {
  let isFolder: boolean;
  try {
    isFolder = lstatSync(where).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT") throw error;
    return unchanged() ? "done" : "async"; // nothing to delete; gone where something was planned: a change
  }
  if (isFolder || !unchanged()) return "async";
  try {
    unlinkSync(where); // removes a link itself, never what it points at
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return "done";
    if (code === "EISDIR" || code === "EPERM") return "async"; // became a folder meanwhile
    throw error;
  }
  return "done";
}

const uid = process.getuid?.();
const gid = process.getgid?.();

/** As keepOwner in apply-files.ts: the owner of the name replaced, or of the folder where nothing is. */
function keepOwnerNow(fd: number, where: string): void {
  if (uid === undefined) return;
  let there;
  try {
    there = lstatSync(where);
  } catch {
    try {
      there = statSync(dirname(where));
    } catch {
      return;
    }
  }
  if (there.uid === uid && there.gid === gid) return;
  if (uid !== 0 && there.uid !== uid) return;
  try {
    fchownSync(fd, there.uid, there.gid);
  } catch {
    // a group the process is not in: keep its own
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}
