import { closeSync, constants, fchmodSync, fchownSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { lstatSync, openSync, rename, statSync, unlinkSync } from "../core/named-fs.js";
import type { HeldWorkspace, OUTSIDE } from "../checkpoint/held-workspace.js";

/**
 * The synchronous form of a file's restore and of a deletion, for the common case: many paths acted on in one
 * turn of the event loop, through folders already held, instead of a thread-pool round trip per call (about
 * twenty per file: docs/ARCHITECTURE.md, "Batched file work"). Each does the same steps with the same checks
 * as the asynchronous form in restore-async.ts; whatever is not the common case (a temp name already taken, a
 * folder where the file goes, a folder to delete, a path found changed since the plan) returns "async" having
 * changed nothing, and the caller does that path the asynchronous way, which handles it.
 */
export type NowOutcome = "done" | "async";

const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Restores a file at `path` through its folder held open: the temp is written with synchronous calls (open
 * exclusively and never through a link, write, the owner of what it replaces, `mode`), then, if `unchanged`
 * still says the path is as planned, renamed over it. The rename alone goes to the thread pool: replacing a
 * file makes ext4 start writing the new one out (auto_da_alloc), which can wait on a busy disk and must not
 * hold the event loop. A path found changed is left as it is (the temp removed) for the asynchronous form.
 */
export async function restoreFileNow(
  held: HeldWorkspace,
  path: string,
  temp: (where: string) => string,
  bytes: Uint8Array,
  mode: number,
  unchanged: (where: string) => boolean,
  owner: Owner = {},
): Promise<NowOutcome | typeof OUTSIDE> {
  return held.at(
    path,
    async (where) => {
      const tempName = temp(where);
      if (!writeTempNow(where, tempName, bytes, mode, owner)) return "async";
      try {
        // Looked at last, with the new bytes ready: the time left between the look and the rename is the least.
        if (!unchanged(where)) {
          unlinkQuietly(tempName);
          return "async"; // found changed: what to do about it is the asynchronous form's (onChanged)
        }
        await rename(tempName, where); // replaces a symlink itself, never writes through it
        return "done";
      } catch {
        unlinkQuietly(tempName);
        return "async"; // a folder there (EISDIR), or an error the asynchronous form reports with its path
      }
    },
    { create: true },
  );
}

/** The temp's bytes, owner and mode; false (nothing made) when its name is taken: a crashed run's temp. */
function writeTempNow(where: string, temp: string, bytes: Uint8Array, mode: number, owner: Owner): boolean {
  let fd: number;
  try {
    fd = openSync(temp, CREATE_FLAGS, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
    giveOwnerNow(fd, where, owner);
    fchmodSync(fd, mode); // after writing (and chown, which clears set-id bits): open()'s mode is cut by the umask
  } catch (error) {
    closeSync(fd);
    unlinkQuietly(temp);
    throw error;
  }
  closeSync(fd);
  return true;
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

/** The owner and group a file's record names; absent in records written before owners were. */
export type Owner = { uid?: number | undefined; gid?: number | undefined };

/**
 * As giveOwner in restore-async.ts: the owner the record names, or, for a record without one, that of the name
 * replaced, or of the folder where nothing is.
 */
function giveOwnerNow(fd: number, where: string, owner: Owner): void {
  if (uid === undefined) return;
  let there: { uid: number; gid: number } | undefined =
    owner.uid === undefined ? undefined : { uid: owner.uid, gid: owner.gid ?? gid! };
  if (there === undefined) {
    try {
      there = lstatSync(where);
    } catch {
      try {
        there = statSync(dirname(where));
      } catch {
        return;
      }
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
