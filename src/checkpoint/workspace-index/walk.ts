import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, type BigIntStats } from "node:fs";
import { WorkspaceTooLargeError } from "../../core/errors.js";
import type { FolderListing, IndexEntry } from "./index-entry.js";
import type { IgnoreRules, Scope } from "./ignore-rules.js";

export interface WalkLimits {
  /** Tracked entries (files, folders, links) past which the scan is refused. */
  maxFiles: number;
  /** Bytes of tracked files (those kept, up to `maxFileBytes` each) past which the scan is refused. */
  maxBytes: number;
  /** A file larger than this is tracked by its stat only and recorded `skipped: too_large`. */
  maxFileBytes: number;
}

/** What the walk starts from: the entries and folder listings of the previous scan. */
export interface Known {
  entries: ReadonlyMap<string, IndexEntry>;
  folders?: ReadonlyMap<string, FolderListing>;
}

export interface Walked {
  /**
   * Every tracked path with its stat. An entry whose stat is unchanged (and was not racy) is the
   * previous entry itself (`===`); any other is new, with `hash` / `target` still to be filled in.
   */
  entries: Map<string, IndexEntry>;
  /** Paths whose entry is not the previous one: new, stat changed, or racy. */
  differing: string[];
  /** How many paths of the previous entries were found again (all of them: nothing was removed). */
  foundAgain: number;
  /** Folders that could not be listed: what the index held below them is kept as it was. */
  unlisted: string[];
  /** The listings to trust on the next walk (folders listed now, or whose listing still held). */
  folders: Map<string, FolderListing>;
}

// The walk's stats are synchronous: on these machines an async lstat per file costs ~5x a sync
// one (10k files: ~130 ms against ~25 ms), and the walk is the cost every command pays. It
// yields to the event loop every YIELD_EVERY entries so a lock lease's timer still runs.
const YIELD_EVERY = 2000;
const MAX_GITIGNORE_BYTES = 1024 * 1024;

/**
 * Timestamps within this much of the scan that saw them are not trusted to tell a later change (git's
 * racy rule): the coarsest common file-time granularity (FAT's 2 s) also covers the kernel's coarse
 * clock tick.
 */
export const RACY_WINDOW_NS = 2_000_000_000n;

/**
 * Lists every tracked path below `realWorkspace` with what lstat says of it, never following a
 * symlink and leaving out what `rules` ignore. Reads nothing but folder listings and `.gitignore`
 * files; a folder whose stat is what it was when `known` listed it, outside the racy window, is
 * not listed again (its files are still each lstat'ed: a change of content does not touch the
 * folder). Throws WORKSPACE_TOO_LARGE as soon as a limit is passed, before anything is stored.
 */
export async function walkWorkspace(
  realWorkspace: string,
  rules: IgnoreRules,
  limits: WalkLimits,
  known: Known = { entries: new Map() },
): Promise<Walked> {
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const entries = new Map<string, IndexEntry>();
  const differing: string[] = [];
  const folders = new Map<string, FolderListing>();
  const unlisted: string[] = [];
  let foundAgain = 0;
  let bytes = 0;
  let sinceYield = 0;
  let root: BigIntStats | undefined;
  try {
    root = lstatSync(realWorkspace, { bigint: true, throwIfNoEntry: false });
  } catch {
    root = undefined;
  }
  const queue: { path: string; absolute: string; scope: Scope; stat: BigIntStats | undefined }[] = [
    { path: "", absolute: realWorkspace, scope: rules.root(), stat: root },
  ];
  while (queue.length > 0) {
    const dir = queue.pop()!;
    let names: string[];
    const listing = known.folders?.get(dir.path);
    if (listing !== undefined && dir.stat !== undefined && stillHolds(listing, dir.stat)) {
      names = listing.names;
      folders.set(dir.path, listing);
    } else {
      try {
        names = readdirSync(dir.absolute);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== "ENOENT" && code !== "ENOTDIR") unlisted.push(dir.path);
        continue;
      }
      if (dir.stat?.isDirectory())
        folders.set(dir.path, {
          mtimeNs: dir.stat.mtimeNs,
          ctimeNs: dir.stat.ctimeNs,
          ino: dir.stat.ino,
          names,
          listedAtNs: nowNs,
        });
    }
    const scope = names.includes(".gitignore")
      ? rules.inside(dir.scope, dir.path, readGitignore(`${dir.absolute}/.gitignore`))
      : dir.scope;
    for (const name of names) {
      const path = dir.path === "" ? name : `${dir.path}/${name}`;
      const absolute = `${dir.absolute}/${name}`;
      let info: BigIntStats | undefined;
      try {
        info = lstatSync(absolute, { bigint: true, throwIfNoEntry: false });
      } catch {
        continue; // vanished or unreachable between the listing and the stat: not there
      }
      if (info === undefined) continue;
      const mode = Number(info.mode); // once: BigIntStats' isDirectory() and friends make BigInts per call
      const kind = kindOfMode(mode);
      const isDirectory = kind === "directory";
      if (rules.ignores(scope, path, name, isDirectory)) continue;
      const before = known.entries.get(path);
      if (before !== undefined) foundAgain++;
      let entry: IndexEntry;
      if (before !== undefined && !before.racy && sameStatAs(before, info, kind, mode)) entry = before;
      else {
        entry = entryOf(info);
        differing.push(path);
      }
      entries.set(path, entry);
      if (entry.kind === "file" && entry.size <= limits.maxFileBytes) bytes += entry.size;
      if (entries.size > limits.maxFiles || bytes > limits.maxBytes)
        throw new WorkspaceTooLargeError(realWorkspace, entries.size, bytes, {
          maxFiles: limits.maxFiles,
          maxBytes: limits.maxBytes,
        });
      if (isDirectory) queue.push({ path, absolute, scope, stat: info });
      if (++sinceYield >= YIELD_EVERY) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  }
  return { entries, differing, foundAgain, unlisted, folders };
}

/**
 * True when a folder still holds what `listing` names: its stat is the same, and the listing was taken
 * after the racy window of that stat. Listed within it, a name added in the same timestamp tick
 * would leave mtime and ctime as they were (`touch -r` puts mtime back, never ctime).
 */
function stillHolds(listing: FolderListing, now: BigIntStats): boolean {
  return (
    listing.mtimeNs === now.mtimeNs &&
    listing.ctimeNs === now.ctimeNs &&
    listing.ino === now.ino &&
    listing.mtimeNs < listing.listedAtNs - RACY_WINDOW_NS &&
    listing.ctimeNs < listing.listedAtNs - RACY_WINDOW_NS
  );
}

/** True when `info` says the same as `entry` (see `sameStat`), without making an entry of it. */
function sameStatAs(entry: IndexEntry, info: BigIntStats, kind: IndexEntry["kind"], mode: number): boolean {
  return (
    entry.mtimeNs === info.mtimeNs &&
    entry.ctimeNs === info.ctimeNs &&
    entry.ino === info.ino &&
    entry.kind === kind &&
    entry.mode === (mode & 0o7777) &&
    entry.size === Number(info.size)
  );
}

const { S_IFMT, S_IFREG, S_IFDIR, S_IFLNK } = constants;

function kindOfMode(mode: number): IndexEntry["kind"] {
  const type = mode & S_IFMT;
  return type === S_IFREG ? "file" : type === S_IFDIR ? "directory" : type === S_IFLNK ? "symlink" : "other";
}

export function entryOf(info: BigIntStats): IndexEntry {
  const mode = Number(info.mode);
  return {
    kind: kindOfMode(mode),
    size: Number(info.size),
    mtimeNs: info.mtimeNs,
    ctimeNs: info.ctimeNs,
    ino: info.ino,
    mode: mode & 0o7777,
  };
}

/** A `.gitignore`'s text, read without following a link (it could lead outside); undefined if not a plain file. */
function readGitignore(absolute: string): string | undefined {
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
