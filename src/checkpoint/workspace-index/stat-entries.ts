// What lstat says of a path, as the index keeps it, and when two stats say the same (git's racy rule).
import { constants, type BigIntStats } from "node:fs";
import type { FolderListing, IndexEntry } from "./index-entry.js";

/**
 * Timestamps within this much of the scan that saw them are not trusted to tell a later change (git's
 * racy rule): the coarsest common file-time granularity (FAT's 2 s) also covers the kernel's coarse
 * clock tick.
 */
export const RACY_WINDOW_NS = 2_000_000_000n;

/** What the index needs of a path's lstat: a BigIntStats, or the same fields taken on a helper thread. */
export type Lstat = Pick<BigIntStats, "mode" | "size" | "mtimeNs" | "ctimeNs" | "ino" | "nlink" | "uid" | "gid">;

/**
 * True when a folder still holds what `listing` names: its stat is the same, and the listing was taken
 * after the racy window of that stat. Listed within it, a name added in the same timestamp tick
 * would leave mtime and ctime as they were (`touch -r` puts mtime back, never ctime).
 */
export function stillHolds(listing: FolderListing, now: Lstat): boolean {
  return (
    listing.mtimeNs === now.mtimeNs &&
    listing.ctimeNs === now.ctimeNs &&
    listing.ino === now.ino &&
    listingTrusted(listing)
  );
}

/** True when `listing` was taken past the racy window of its folder's times: it can be trusted while they hold. */
export function listingTrusted(listing: FolderListing): boolean {
  return listing.mtimeNs < listing.listedAtNs - RACY_WINDOW_NS && listing.ctimeNs < listing.listedAtNs - RACY_WINDOW_NS;
}

/** True when `info` says the same as `entry` (see `sameStat`), without making an entry of it. */
export function sameStatAs(entry: IndexEntry, info: Lstat, kind: IndexEntry["kind"], mode: number): boolean {
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

/** The stat a folder's entry was made of, as far as walking into the folder reads it. */
export function folderStatOf(entry: IndexEntry): Lstat {
  return {
    mode: BigInt(S_IFDIR | entry.mode),
    size: BigInt(entry.size),
    mtimeNs: entry.mtimeNs,
    ctimeNs: entry.ctimeNs,
    ino: entry.ino,
    nlink: 1n,
    uid: BigInt(entry.uid ?? 0),
    gid: BigInt(entry.gid ?? 0),
  };
}

export function kindOfMode(mode: number): IndexEntry["kind"] {
  const type = mode & S_IFMT;
  return type === S_IFREG ? "file" : type === S_IFDIR ? "directory" : type === S_IFLNK ? "symlink" : "other";
}

export function entryOf(info: Lstat): IndexEntry {
  const mode = Number(info.mode);
  return {
    kind: kindOfMode(mode),
    size: Number(info.size),
    mtimeNs: info.mtimeNs,
    ctimeNs: info.ctimeNs,
    ino: info.ino,
    mode: mode & 0o7777,
    uid: Number(info.uid),
    gid: Number(info.gid),
  };
}
