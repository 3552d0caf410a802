import { closeSync, constants, fchmodSync, fstatSync, read, type Stats } from "node:fs";
import {
  copyFile,
  copyFileSync,
  lstatSync,
  mkdirSync,
  open,
  openSync,
  readlinkSync,
  symlinkSync,
} from "../core/named-fs.js";
import { promisify } from "node:util";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { fsyncDir } from "../core/atomic-file.js";
import { syncFilesystem } from "../core/sync-filesystem.js";
import { placeLexically } from "../checkpoint/confine.js";
import { HeldWorkspace, OUTSIDE } from "../checkpoint/held-workspace.js";

/** What one entry of the target is: the kind made there. */
export type MadeKind = "file" | "symlink" | "directory";

export interface CopiedEntries {
  /** Entries made in the target, by workspace-relative path. */
  made: Map<string, MadeKind>;
  /** Paths not copied: outside the source, unreadable, or not a file, folder or link. */
  skipped: { path: string; reason: string }[];
  /**
   * Folders whose mode lacks the owner's rwx: made with it (so what goes inside can be written) and set
   * to their own mode by {@link setFolderModes} once everything inside is.
   */
  folderModes: Map<string, number>;
}

// Entries are looked at and small files copied with synchronous calls, in order: a thread-pool hop per call
// (lstat, open, fstat, copy, close) cost many times what `cp -a` spends a file (docs/ARCHITECTURE.md,
// "Forks"; bench "fork into its own folder @5k files vs cp -a"). Files past SYNC_COPY_BYTES are copied
// afterwards, `concurrency` at a time,
// off the event loop; it is yielded every YIELD_EVERY entries so a lock lease's timer still runs.
const SYNC_COPY_BYTES = 1024 * 1024;
const YIELD_EVERY = 256;
// Bytes read and written at once where a file is copied through its descriptor (no /proc/self/fd).
const CHUNK = 256 * 1024;
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const readAt = promisify(read);

/**
 * Copies each of `paths` from the source workspace to the target as it is now: a file's bytes and mode, a
 * link as a link (its target as written, never followed), a folder with its mode but not what is below it
 * (the paths below it that are wanted are in `paths`). The folders above a path are made too, with their
 * modes. A path missing in the source is left out, as is one below a link. Every entry is reached through its
 * folder held open on both sides (docs/ARCHITECTURE.md, "Confinement"): nothing outside either workspace is
 * read or written. `beforeMaking` hears each top-level name before anything is made under it (a failed fork
 * removes them).
 */
export async function copyEntries(
  fromReal: string,
  toReal: string,
  paths: Iterable<string>,
  options: { concurrency: number; beforeMaking: (topName: string) => void; into?: CopiedEntries },
): Promise<CopiedEntries> {
  const result: CopiedEntries = options.into ?? { made: new Map(), skipped: [], folderModes: new Map() };
  const from = await HeldWorkspace.open(fromReal);
  const to = await HeldWorkspace.open(toReal);
  try {
    const wanted = new Set<string>();
    for (const given of paths) {
      // Lexically only: every use goes through a held folder, checked where it really is at that moment.
      const place = placeLexically(fromReal, given, fromReal);
      if (!place.inside) {
        result.skipped.push({ path: place.path, reason: "outside_workspace" });
        continue;
      }
      if (place.path === ".") continue; // the target folder itself exists already
      for (let p = place.path; p !== "" && !wanted.has(p); p = p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "")
        wanted.add(p);
    }
    // In path order, one at a time: a folder comes before anything below it (its path is their prefix), and
    // each folder's entries come together, so the folders held open are those above the current path only.
    const ordered = [...wanted].filter((p) => !result.made.has(p)).sort();
    const belowLink = (path: string) => {
      for (let slash = path.indexOf("/"); slash !== -1; slash = path.indexOf("/", slash + 1))
        if (result.made.get(path.slice(0, slash)) === "symlink") return true;
      return false;
    };
    const large: string[] = [];
    let sinceYield = 0;
    let folder = "";
    for (const path of ordered) {
      const parent = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
      const done = finishedFolder(folder, parent);
      if (done !== undefined) {
        from.forget(done); // a walk of more folders than HeldWorkspace keeps open would reopen one per use
        to.forget(done);
      }
      folder = parent;
      if (++sinceYield >= YIELD_EVERY) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (belowLink(path)) {
        // The link is copied as a link, never gone through; say so only where it leads outside.
        const where = await from.at(path, async () => "inside").catch(() => "missing");
        if (where === OUTSIDE) result.skipped.push({ path, reason: "outside_workspace" });
        continue;
      }
      const info = await look(from, path, result);
      if (info === undefined) continue;
      if (info.isFile() && info.size > SYNC_COPY_BYTES) {
        large.push(path);
        continue;
      }
      options.beforeMaking(path.split("/")[0]!);
      if (info.isDirectory()) await makeFolder(to, path, info.mode & 0o7777, result);
      else if (info.isSymbolicLink()) await copyLink(from, to, path, result);
      else await copyRegularFile(from, to, path, result, false);
    }
    await forEachLimited(large, options.concurrency, async (path) => {
      options.beforeMaking(path.split("/")[0]!);
      await copyRegularFile(from, to, path, result, true);
    });
    return result;
  } finally {
    await Promise.all([from.close(), to.close()]);
  }
}

/** The topmost folder at or above `previous` that `next` is not in: the walk is done with it. */
function finishedFolder(previous: string, next: string): string | undefined {
  if (previous === "" || previous === next) return undefined;
  const left = previous.split("/");
  const right = next === "" ? [] : next.split("/");
  let same = 0;
  while (same < left.length && same < right.length && left[same] === right[same]) same++;
  return same < left.length ? left.slice(0, same + 1).join("/") : undefined;
}

/** The source entry's lstat, or undefined (noted in `skipped` when it is not simply missing). */
async function look(from: HeldWorkspace, path: string, result: CopiedEntries): Promise<Stats | undefined> {
  let info;
  try {
    info = await from.at(path, async (where) => lstatSync(where));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined; // not there now: nothing to copy
    result.skipped.push({ path, reason: `unreadable (${code ?? String(error)})` });
    return undefined;
  }
  if (info === OUTSIDE) {
    result.skipped.push({ path, reason: "outside_workspace" });
    return undefined;
  }
  if (!info.isDirectory() && !info.isFile() && !info.isSymbolicLink()) {
    result.skipped.push({ path, reason: "not_a_regular_file" });
    return undefined;
  }
  return info;
}

async function makeFolder(to: HeldWorkspace, path: string, mode: number, result: CopiedEntries): Promise<void> {
  await made(to, path, async (where) => {
    mkdirSync(where);
    chmodFolder(where, mode | 0o700);
  });
  if ((mode & 0o700) !== 0o700) result.folderModes.set(path, mode);
  result.made.set(path, "directory");
}

async function copyLink(from: HeldWorkspace, to: HeldWorkspace, path: string, result: CopiedEntries): Promise<void> {
  let target;
  try {
    target = await from.at(path, async (where) => readlinkSync(where));
  } catch (error) {
    result.skipped.push({ path, reason: `unreadable (${(error as NodeJS.ErrnoException).code ?? String(error)})` });
    return;
  }
  if (target === OUTSIDE) {
    result.skipped.push({ path, reason: "outside_workspace" });
    return;
  }
  await made(to, path, async (where) => symlinkSync(target, where));
  result.made.set(path, "symlink");
}

/** Runs `make` on the target's name for `path`, its folders made as needed; a path leading outside is an error. */
async function made(to: HeldWorkspace, path: string, make: (where: string) => Promise<void>): Promise<void> {
  const done = await to.at(path, make, { create: true });
  // The target is a new folder nothing else writes to: a way out there is an attack on this very call.
  if (done === OUTSIDE) throw Object.assign(new Error(`${path} leads outside the new workspace`), { code: "EXDEV" });
}

/**
 * Copies a regular file through a descriptor opened without following links, so what is copied is what was
 * checked, into a new file created O_EXCL (a link in its place is not followed), with the source's mode. Where
 * /proc/self/fd names the descriptor (Linux), the OS copies it (copy_file_range), synchronously or, for a
 * large file, on the thread pool; elsewhere its bytes are read and written in chunks. A source that cannot be
 * read is noted in `skipped`; a failure to write throws.
 */
async function copyRegularFile(
  from: HeldWorkspace,
  to: HeldWorkspace,
  path: string,
  result: CopiedEntries,
  large: boolean,
): Promise<void> {
  let fd: number | typeof OUTSIDE;
  try {
    fd = await from.at(path, async (where) => openSync(where, READ_FLAGS));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === "ELOOP" ? "unreadable (became a symlink while being copied)" : `unreadable (${code})`;
    result.skipped.push({ path, reason });
    return;
  }
  if (fd === OUTSIDE) {
    result.skipped.push({ path, reason: "outside_workspace" });
    return;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) {
      result.skipped.push({ path, reason: "not_a_regular_file" });
      return;
    }
    const source = `/proc/self/fd/${fd}`;
    await made(to, path, async (where) => {
      if (!HeldWorkspace.holdsFolders) return copyThroughDescriptor(fd as number, where, info.mode & 0o7777);
      // COPYFILE_EXCL creates the target O_CREAT | O_EXCL, then gives it the source's mode (fchmod, not umask).
      if (large) await copyFile(source, where, constants.COPYFILE_EXCL);
      else copyFileSync(source, where, constants.COPYFILE_EXCL);
    });
    result.made.set(path, "file");
  } finally {
    closeSync(fd);
  }
}

/** The copy without a name for the descriptor: its bytes read and written in chunks, then its mode set. */
async function copyThroughDescriptor(fd: number, where: string, mode: number): Promise<void> {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const target = await open(where, flags, 0o600);
  try {
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (let at = 0; ; ) {
      const { bytesRead } = await readAt(fd, buffer, 0, buffer.length, at);
      if (bytesRead === 0) break;
      await target.write(buffer, 0, bytesRead, at);
      at += bytesRead;
    }
    await target.chmod(mode); // after writing, and explicitly: open()'s mode is cut by the umask
  } finally {
    await target.close();
  }
}

/** Sets a folder's mode through a descriptor opened without following a link in its place. */
function chmodFolder(where: string, mode: number): void {
  const fd = openSync(where, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}

/** Gives the folders of {@link CopiedEntries.folderModes} their own modes, deepest first (after their contents). */
export async function setFolderModes(toReal: string, modes: ReadonlyMap<string, number>): Promise<void> {
  if (modes.size === 0) return;
  const to = await HeldWorkspace.open(toReal);
  try {
    const deepestFirst = [...modes].sort(([a], [b]) => b.split("/").length - a.split("/").length);
    for (const [path, mode] of deepestFirst) await made(to, path, async (where) => chmodFolder(where, mode));
  } finally {
    await to.close();
  }
}

/**
 * Makes what was written in the target durable: one syncfs of its filesystem, or where there is none an
 * fsync of each file made and of each folder holding an entry made.
 */
export async function makeDurable(toReal: string, made: ReadonlyMap<string, MadeKind>): Promise<void> {
  if (await syncFilesystem(toReal)) return;
  const to = await HeldWorkspace.open(toReal);
  try {
    const files = [...made].filter(([, kind]) => kind === "file").map(([path]) => path);
    await forEachLimited(files, 8, async (path) => {
      await to.at(path, async (where) => {
        const fh = await open(where, READ_FLAGS);
        try {
          await fh.sync();
        } finally {
          await fh.close();
        }
      });
    });
    const folders = new Set([...made.keys()].map((p) => (p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "")));
    for (const folder of folders) await to.folder(folder, fsyncDir);
  } finally {
    await to.close();
  }
}
