import { createHash, randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { dirname } from "node:path";
import { lchown, lstat, mkdir, open, rename, stat, symlink, unlink } from "../core/named-fs.js";
import { fsyncDir } from "../core/atomic-file.js";
import { SYNC_FILESYSTEM_FROM, syncFilesystem } from "../core/sync-filesystem.js";
import type { FileSnapshot } from "../core/events.js";
import { isAgentTapeError } from "../core/errors.js";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { confine, placeLexically, type ParentLooks } from "../checkpoint/confine.js";
import { HeldWorkspace, OUTSIDE } from "../checkpoint/held-workspace.js";
import { removeEntry } from "../checkpoint/remove-entry.js";
import { isStrictlyBelowAny } from "./plan.js";
import { lateChange, stillAsPlannedSync, type LateChange } from "./still-as-planned.js";
import { deleteNow, restoreFileNow, type NowOutcome } from "./restore-now.js";
import { yieldIfLong } from "../core/time-slices.js";

export interface ApplyOptions {
  concurrency?: number;
  /**
   * Names the operation (session, rewind, step) so that its temp names are the same each time it runs: a run
   * that recovery repeats after a crash then clears what the crashed run left, and nothing else. Without it,
   * the temp names are random.
   */
  operation?: string;
  /**
   * What each path was when the plan looked, and what the records make it: a path found as neither right before
   * it is replaced or deleted is left as it is and listed in `changed` (docs/ARCHITECTURE.md, "Conflicts").
   */
  planned?: ReadonlyMap<string, readonly FileSnapshot[]>;
  /**
   * Told of each path found changed at that last look (see `planned`), before anything is written there: it
   * throws to refuse the whole operation, returns "left" to leave the path as it is (listed in `changed`), or
   * returns the planned states again once it has kept what is there for the undo: the path is then looked at
   * again and written (docs/ARCHITECTURE.md, "Conflicts"). Without it, every such path is left.
   */
  onChanged?: (change: LateChange) => Promise<"left" | ReadonlyMap<string, readonly FileSnapshot[]>>;
}

export interface ApplyResult {
  /** Paths that turned out to lead outside the workspace at the last moment, and were left alone. */
  refused: string[];
  /** Paths found changed just before they were to be replaced or deleted (see `planned`), and left as they are. */
  changed: string[];
}

/**
 * Makes each path what its record says: a file with the blob's bytes and mode, a symlink, a
 * folder, or nothing. Restores run parents first, deletions deepest first, so a folder that must
 * go takes with it whatever a restore put inside it. Files are written temp + rename, so a crash
 * leaves each file old or new, never torn; every step is idempotent (recovery re-runs it). All is
 * durable when it returns, made so once at the end rather than file by file: a few files are fsynced
 * together with their folders (each once, all at the same time); from SYNC_FILESYSTEM_FROM files on, one
 * syncfs of the workspace's filesystem replaces those fsyncs (docs/ARCHITECTURE.md, "Rewind intent":
 * until the log is cut, recovery re-runs this step, so a power loss before then loses nothing).
 * Each path is reached through its folder held open and checked inside the workspace right when
 * it is touched (docs/ARCHITECTURE.md, "Confinement"), so a symlink swapped in after the plan, or
 * while the write happens, still cannot lead a write or a delete outside.
 */
export async function applyFileRecords(
  realWorkspace: string,
  records: readonly FileSnapshot[],
  blobBytes: (hash: string) => Promise<Buffer>,
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  const held = await HeldWorkspace.open(realWorkspace);
  try {
    const temps = new TempNames(records, options.operation);
    return await applyHeld(held, records, blobBytes, options.concurrency ?? 8, temps, options);
  } finally {
    await held.close();
  }
}

async function applyHeld(
  held: HeldWorkspace,
  records: readonly FileSnapshot[],
  blobBytes: (hash: string) => Promise<Buffer>,
  concurrency: number,
  temps: TempNames,
  options: ApplyOptions,
): Promise<ApplyResult> {
  const refused: string[] = [];
  const changed: string[] = [];
  let planned = options.planned;
  // Each path is looked at again right before it is replaced or deleted, in the folder the write uses: an edit
  // saved since the conflict check is never overwritten unseen (docs/ARCHITECTURE.md, "Conflicts"). What is
  // kept for the undo is looked at again (a few times: a path that keeps changing is left).
  const unchanged = async (path: string, where: string, deep: boolean): Promise<boolean> => {
    for (let look = 1; planned !== undefined; look++) {
      const change = await lateChange(where, path, planned, deep);
      if (change === undefined) return true;
      const outcome = look <= 3 && options.onChanged ? await options.onChanged(change) : "left";
      if (outcome === "left") {
        changed.push(path);
        return false;
      }
      planned = outcome;
    }
    return true;
  };
  const depth = (p: string) => (p === "." ? 0 : p.split("/").length);
  // Below a path made a file or a link, or removed, nothing is left of its own: acting there would act
  // through the link just made (deleting what it leads to), so such records are done by their parent's.
  const nonFolders = new Set(
    records.filter((r) => r.kind === "blob" || r.kind === "symlink" || r.kind === "absent").map((r) => r.path),
  );
  const own = (r: FileSnapshot) => !isStrictlyBelowAny(r.path, nonFolders);
  const restores = records
    .filter((r) => r.kind !== "absent" && r.kind !== "skipped" && own(r))
    .sort((a, b) => depth(a.path) - depth(b.path));
  const deletes = records.filter((r) => r.kind === "absent" && own(r)).sort((a, b) => depth(b.path) - depth(a.path));
  const touchedDirs = new Set<string>();
  const parentOf = (path: string) => (path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "");

  // A record's path as the workspace-relative name to act on; undefined (and refused) when it leads outside.
  // With folders held, the folder opened is checked at the moment of use anyway (docs/ARCHITECTURE.md,
  // "Confinement"): the parents need a look only when reaching it fails, to tell "outside" from an OS error.
  const holding = HeldWorkspace.holdsFolders;
  const looks: ParentLooks = new Map();
  const place = async (path: string): Promise<string | undefined> => {
    const where = holding
      ? placeLexically(held.realWorkspace, path, held.realWorkspace)
      : await confine(held.realWorkspace, path, held.realWorkspace, looks);
    if (!where.inside) {
      refused.push(path);
      return undefined;
    }
    return where.path;
  };
  /** True (and refused) when reaching `path` failed because a parent leads outside, e.g. a dangling link. */
  const leadsOutside = async (path: string): Promise<boolean> => {
    if (!holding || (await confine(held.realWorkspace, path, held.realWorkspace, looks)).inside) return false;
    refused.push(path);
    return true;
  };
  const act = async (path: string, action: (where: string) => Promise<void>) => {
    let done;
    try {
      done = await held.at(path, action, { create: true });
    } catch (error) {
      if (await leadsOutside(path)) return;
      throw naming(path, error);
    }
    if (done === OUTSIDE) refused.push(path);
    else touchedDirs.add(parentOf(path));
  };

  // Folders one depth at a time (a parent before its children), files in parallel.
  for (const record of restores) {
    if (record.kind !== "directory") continue;
    const path = await place(record.path);
    if (path === undefined) continue;
    if (path === ".") await held.at(".", (where) => restoreMode(where, record.mode, record));
    else
      await act(path, async (where) => {
        if (await unchanged(path, where, false)) await restoreDirectory(held, path, where, record.mode, record);
      });
  }
  const files = restores.filter((r) => r.kind !== "directory");
  // Many files: made durable by one syncfs at the end instead of an fsync each.
  const batched = files.length >= SYNC_FILESYSTEM_FROM;
  const written: string[] = [];
  const restoreOne = async (record: FileSnapshot) => {
    const path = await place(record.path);
    if (path === undefined || path === ".") return; // the workspace itself stays a folder
    if (record.kind === "blob") {
      const bytes = await blobBytes(record.blob);
      await act(path, (where) =>
        restoreFile(held, path, where, temps.of(record, where), bytes, record, () => unchanged(path, where, true)),
      );
      written.push(path);
    } else if (record.kind === "symlink") {
      await act(path, (where) =>
        restoreSymlink(held, path, where, temps.of(record, where), record, () => unchanged(path, where, true)),
      );
    }
  };
  // Where folders are held, files are written with synchronous calls, many per turn of the event loop
  // (restore-now.ts); what that form leaves ("async") is done as before.
  const unchangedNow = (path: string, where: string, deep: boolean): boolean =>
    planned === undefined || stillAsPlannedSync(where, path, planned, deep);
  const now = async (path: string, act: (where: string) => NowOutcome, create: boolean): Promise<boolean> => {
    let done;
    try {
      done = held.atSync(path, act, { create });
    } catch {
      return false; // the asynchronous form does it again, and says what went wrong
    }
    if (done === "async") return false;
    if (done === OUTSIDE) refused.push(path);
    else touchedDirs.add(parentOf(path));
    return true;
  };
  await forEachLimited(files, concurrency, async (record) => {
    if (!holding || record.kind !== "blob") return restoreOne(record);
    const place = placeLexically(held.realWorkspace, record.path, held.realWorkspace);
    if (!place.inside || place.path === ".") return restoreOne(record); // refused there
    const path = place.path;
    const bytes = await blobBytes(record.blob);
    let done;
    try {
      done = await restoreFileNow(
        held,
        path,
        (where) => temps.of(record, where),
        bytes,
        record.mode,
        (where) => unchangedNow(path, where, true),
        record,
      );
    } catch {
      done = "async"; // the asynchronous form does it again, and says what went wrong
    }
    if (done === "async") return restoreOne(record);
    if (done === OUTSIDE) refused.push(path);
    else {
      touchedDirs.add(parentOf(path));
      written.push(path);
    }
  });
  for (const record of deletes) {
    const path = await place(record.path);
    if (path === undefined || path === ".") continue; // never delete the workspace itself
    held.forget(path);
    if (holding) {
      await yieldIfLong();
      if (await now(path, (where) => deleteNow(where, () => unchangedNow(path, where, true)), false)) continue;
    }
    let done;
    try {
      // removes a link itself, never what it points at
      done = await held.at(path, async (where) => {
        if (await unchanged(path, where, true)) await removeEntry(where);
      });
    } catch (error) {
      if (await leadsOutside(path)) continue;
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") continue; // no folder to hold it: nothing to delete
      throw naming(path, error);
    }
    if (done === OUTSIDE) refused.push(path);
    else touchedDirs.add(parentOf(path));
  }
  // Make the files, renames and unlinks durable before the log says the rewind happened: no file waited for
  // the disk on its own, so the waits overlap here (files and folders at once: until this returns nothing
  // relies on their order, recovery re-runs the whole step).
  if (batched && (await syncFilesystem(held.realWorkspace))) return { refused, changed };
  await Promise.all([
    forEachLimited(written, concurrency, (path) => held.at(path, fsyncFile).then(() => undefined, ignoreGone)),
    ...[...touchedDirs].map((dir) => held.folder(dir, fsyncDir).catch(() => undefined)),
  ]);
  return { refused, changed };
}

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
async function restoreFile(
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

async function restoreSymlink(
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

/**
 * The temp names a restore writes before renaming into place, in the same held folder as the file. Never the
 * user's name lengthened (a name of 233-255 bytes would pass NAME_MAX), never a name fixed per file (a user's
 * file may be called that): `.agent-tape-<tag>-<n>`, at most 40 bytes, where the tag is drawn from the
 * operation (so a run that recovery repeats makes the same names and clears what a crashed run left, instead
 * of leaving litter in the user's workspace) and n is the record's place in the operation's list.
 */
class TempNames {
  private readonly tag: string;
  private readonly places = new Map<FileSnapshot, number>();

  constructor(records: readonly FileSnapshot[], operation: string | undefined) {
    const seed = operation ?? randomUUID();
    this.tag = createHash("sha256").update(seed).digest("hex").slice(0, 16);
    for (const [place, record] of records.entries()) this.places.set(record, place);
  }

  of(record: FileSnapshot, where: string): string {
    return `${where.slice(0, where.lastIndexOf("/"))}/${tempName(this.tag, this.places.get(record)!)}`;
  }
}

/** The temp name of the `place`-th record of `operation` (see {@link ApplyOptions.operation}). */
export function restoreTempName(operation: string, place: number): string {
  return tempName(createHash("sha256").update(operation).digest("hex").slice(0, 16), place);
}

function tempName(tag: string, place: number): string {
  return `.agent-tape-${tag}-${place.toString(36)}`;
}

/** The OS error of one path, its message naming that path as the workspace has it (its code kept). */
function naming(path: string, error: unknown): unknown {
  if (!(error instanceof Error) || isAgentTapeError(error) || (error as NodeJS.ErrnoException).code === undefined)
    return error;
  const named = new Error(`${path}: ${error.message}`, { cause: error });
  return Object.assign(named, { code: (error as NodeJS.ErrnoException).code });
}

async function restoreDirectory(
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
async function restoreMode(where: string, mode: number, owner: Owned): Promise<void> {
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

/** Fsyncs a restored file, never through a link (gone: nothing to do). */
async function fsyncFile(where: string): Promise<void> {
  let fh;
  try {
    fh = await open(where, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ELOOP") return; // replaced since (a later record, or racing code)
    throw error;
  }
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** A restored file whose folder a later record removed: nothing left to make durable. */
function ignoreGone(error: NodeJS.ErrnoException): void {
  if (error.code !== "ENOENT" && error.code !== "ENOTDIR") throw error;
}

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== "ENOENT") throw error;
}
