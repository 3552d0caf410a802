import type { BigIntStats, Stats } from "node:fs";
import { lstatSync } from "../../core/named-fs.js";
import { HelperThread } from "../../core/helper-thread.js";
import { hasEscapedBytes } from "../../core/byte-names.js";
import type { FolderListing, IndexEntry } from "./index-entry.js";
import { kindOfMode, listingTrusted, type Lstat, stillHolds } from "./stat-entries.js";
import { parentOf } from "./tree-paths.js";

// A later scan lstats every tracked path, and one thread cannot lstat 50k paths as fast as `git status` does
// with its threads: Node's lstat costs twice the system call, and each BigIntStats kept for the walk is garbage
// to collect. So, when the index knows the folders' listings, two helper threads lstat the names of the folders
// whose listing still holds, in jobs of a few thousand names taken in turn, into arrays of numbers; the walk
// starts at once and takes those stats instead of calling lstat, waiting for a folder's job where it is not back
// yet. The threads take plain stats, not BigInt ones (a sixth cheaper each), whose times are milliseconds as
// doubles: the walk trusts one only to say "unchanged" against the index's entry, and lstats again where it
// does not (docs/ARCHITECTURE.md, "Workspace index", stats ahead).

/** Known entries from which a scan stats ahead: below it, the threads' messages cost more than they save. */
export const STAT_AHEAD_FROM = 4096;

/**
 * Where each field of a name's stat taken ahead lies, from the name's first: 1 at `taken` when it was taken. The
 * inode number in two halves of 32 bits: exact whatever it is.
 */
export const SEEN = { taken: 0, mode: 1, size: 2, mtimeMs: 3, ctimeMs: 4, inoHigh: 5, inoLow: 6, nlink: 7 } as const;
const FIELDS = 8;
const HELPERS = 2;
// Names per job: the first is back while the walk still has most of the tree ahead of it.
const JOB_NAMES = 2048;

interface Job {
  /** Absolute folder paths, and the names to lstat in each (null: left to the walk). */
  folders: string[];
  names: (string | null)[][];
  /** The largest inode number a plain stat is trusted to hold exactly (tests lower it to take the other way). */
  plainInodesUpTo: number;
}

// A plain stat's inode number is a double: past 2^53 (NFS file ids, overlayfs) it is not exact, and the rest of
// the job takes BigInt stats. A size past 2^53 is left to the walk.
const SOURCE = `
const { parentPort } = require("node:worker_threads");
const { lstatSync } = require("node:fs");
const HALF = 4294967296;
const plain = (path) => { try { return lstatSync(path, { throwIfNoEntry: false }); } catch { return undefined; } };
const exact = (path) => {
  try { return lstatSync(path, { bigint: true, throwIfNoEntry: false }); } catch { return undefined; }
};
parentPort.on("message", ({ id, job }) => {
  let count = 0;
  for (const names of job.names) count += names.length;
  const answer = new Float64Array(count * ${FIELDS});
  let at = 0;
  let big = false;
  job.folders.forEach((folder, f) => {
    for (const name of job.names[f]) {
      const path = folder + "/" + name;
      const s = name === null || big ? undefined : plain(path);
      if (s !== undefined && s.ino > job.plainInodesUpTo) big = true;
      if (s !== undefined && !big && Number.isSafeInteger(s.size)) {
        answer[at] = 1; answer[at + ${SEEN.mode}] = s.mode; answer[at + ${SEEN.size}] = s.size;
        answer[at + ${SEEN.mtimeMs}] = s.mtimeMs; answer[at + ${SEEN.ctimeMs}] = s.ctimeMs;
        answer[at + ${SEEN.inoHigh}] = Math.floor(s.ino / HALF); answer[at + ${SEEN.inoLow}] = s.ino % HALF;
        answer[at + ${SEEN.nlink}] = s.nlink;
      } else if (name !== null && big) {
        const b = exact(path);
        if (b !== undefined && b.size <= ${Number.MAX_SAFE_INTEGER}n) {
          answer[at] = 1; answer[at + ${SEEN.mode}] = Number(b.mode); answer[at + ${SEEN.size}] = Number(b.size);
          answer[at + ${SEEN.mtimeMs}] = Number(b.mtimeNs) / 1e6;
          answer[at + ${SEEN.ctimeMs}] = Number(b.ctimeNs) / 1e6;
          answer[at + ${SEEN.inoHigh}] = Number(b.ino >> 32n);
          answer[at + ${SEEN.inoLow}] = Number(b.ino & 4294967295n);
          answer[at + ${SEEN.nlink}] = Number(b.nlink);
        }
      }
      at += ${FIELDS};
    }
  });
  parentPort.postMessage({ id, answer }, [answer.buffer]);
});
`;

const helpers = Array.from({ length: HELPERS }, () => new HelperThread<Job, Float64Array>(SOURCE));

// A name whose path the OS must be handed as bytes, or in steps (named-fs.ts), is left to the walk.
const LONGEST_PATH = 1000;

interface Taken {
  listing: FolderListing;
  /** Where the folder's names start in its job's answer. */
  at: number;
  stats?: Float64Array | undefined;
  /** Until its job is back. */
  pending?: Promise<void> | undefined;
}

/** The stats taken ahead, by folder: the walk asks for a folder's while its listing is the one they were taken for. */
export class StatsAhead {
  readonly byFolder = new Map<string, Taken>();

  /** A promise to wait for before asking for the stats of the folder at `path`, while its job is out. */
  pending(path: string): Promise<void> | undefined {
    return this.byFolder.get(path)?.pending;
  }

  /**
   * The stats taken ahead of the names of `listing` (the folder at `path`), when they were: the `index`th name's
   * begin at `at + index * SEEN_FIELDS` of `stats`, if its `SEEN.taken` is 1 (else the walk lstats it itself).
   */
  seen(path: string, listing: FolderListing): { stats: Float64Array; at: number } | undefined {
    const taken = this.byFolder.get(path);
    if (taken?.stats === undefined || taken.listing !== listing) return undefined;
    return { stats: taken.stats, at: taken.at };
  }
}

export const SEEN_FIELDS = FIELDS;

/**
 * Within this many milliseconds a time taken ahead and an entry's are the same time. A double of milliseconds
 * since 1970 is exact to 0.25 µs, and an entry's nanoseconds made a double to as much again: equal times stay
 * within 0.5 µs. Why a change can never hide inside 1 µs: docs/ARCHITECTURE.md, "Workspace index", stats ahead.
 */
const SAME_TIME_MS = 0.001;

/** True when the stat taken ahead at `at` of `stats` says what `entry` says (see `sameStatAs`). */
export function sameAsSeen(entry: IndexEntry, stats: Float64Array, at: number, kind: IndexEntry["kind"]): boolean {
  return (
    entry.kind === kind &&
    entry.mode === (stats[at + SEEN.mode]! & 0o7777) &&
    entry.size === stats[at + SEEN.size] &&
    sameInode(entry.ino, stats[at + SEEN.inoHigh]!, stats[at + SEEN.inoLow]!) &&
    sameTime(entry.ctimeNs, stats[at + SEEN.ctimeMs]!) &&
    sameTime(entry.mtimeNs, stats[at + SEEN.mtimeMs]!)
  );
}

/** An inode number as an entry keeps it, and one taken ahead in two halves: the same number. */
export function sameInode(ino: bigint, high: number, low: number): boolean {
  // Below 2^53 as doubles; past it (NFS file ids, overlayfs) as BigInts, which few names take.
  return high < 2 ** 21 ? Number(ino) === high * 2 ** 32 + low : ino === (BigInt(high) << 32n) + BigInt(low);
}

/** A time in nanoseconds and one of a plain stat in milliseconds: the same time (see SAME_TIME_MS). */
function sameTime(ns: bigint, ms: number): boolean {
  return Math.abs(Number(ns) / 1e6 - ms) < SAME_TIME_MS;
}

/**
 * Sends the names of every folder in `folders` whose listing still holds to the helper threads, to be lstat'ed
 * there. A folder is lstat'ed here first, parents first, and its names are sent only when it and every folder
 * above it is still the folder listed (a folder, the same inode): no path is reached through a folder that
 * became a link since the last walk. Jobs go out as the folders are checked; undefined when no folder held.
 */
export function statAhead(
  workspace: string,
  folders: ReadonlyMap<string, FolderListing>,
  root: Lstat | undefined,
  plainInodesUpTo = Number.MAX_SAFE_INTEGER,
): StatsAhead | undefined {
  const ahead = new StatsAhead();
  let job: Job = { folders: [], names: [], plainInodesUpTo };
  let inJob: Taken[] = [];
  let names = 0;
  let turn = 0;
  const send = () => {
    const [sent, taken] = [job, inJob];
    const pending = helpers[turn++ % HELPERS]!.ask(sent).then((stats) => {
      for (const one of taken) {
        one.stats = stats;
        one.pending = undefined;
      }
    });
    for (const one of taken) one.pending = pending;
    job = { folders: [], names: [], plainInodesUpTo };
    inJob = [];
    names = 0;
  };
  for (const [path, listing, absolute] of heldFolders(workspace, folders, root, plainInodesUpTo)) {
    const taken: Taken = { listing, at: names * FIELDS };
    ahead.byFolder.set(path, taken);
    inJob.push(taken);
    job.folders.push(absolute);
    job.names.push(
      listing.names.map((name) =>
        hasEscapedBytes(name) || absolute.length + name.length > LONGEST_PATH ? null : name,
      ),
    );
    names += listing.names.length;
    if (names >= JOB_NAMES) send();
  }
  if (inJob.length > 0) send();
  return ahead.byFolder.size === 0 ? undefined : ahead;
}

/**
 * The folders whose listing still holds, by an lstat of each (not of their names), parents first: a folder is
 * looked at only inside folders that are still the ones listed (a folder, the same inode), and itself only when it
 * is too. Each with its absolute path.
 */
function* heldFolders(
  workspace: string,
  folders: ReadonlyMap<string, FolderListing>,
  root: Lstat | undefined,
  plainInodesUpTo: number,
): Generator<[string, FolderListing, string]> {
  const same = new Set<string>();
  // A walk sets a folder's listing before those of the folders in it: a folder met before its parent is left out.
  for (const [path, listing] of folders) {
    if (path !== "" && !same.has(parentOf(path))) continue;
    const absolute = path === "" ? workspace : `${workspace}/${path}`;
    if (hasEscapedBytes(absolute) || absolute.length > LONGEST_PATH) continue;
    if (path === "") {
      if (root === undefined || kindOfMode(Number(root.mode)) !== "directory" || root.ino !== listing.ino) continue;
      same.add(path);
      if (stillHolds(listing, root)) yield [path, listing, absolute];
      continue;
    }
    const looked = lookAgain(absolute, listing, plainInodesUpTo);
    if (looked === "another") continue;
    same.add(path);
    if (looked === "holds") yield [path, listing, absolute];
  }
}

/**
 * A listed folder looked at again: another one now (or gone, or not a folder), the same folder ("same": its
 * listing no longer holds), or the same one as listed ("holds"). A plain stat, as the threads take (no BigIntStats
 * made), trusted only to say "the same"; a BigInt one past the inode numbers a plain stat holds exactly.
 */
function lookAgain(absolute: string, listing: FolderListing, plainInodesUpTo: number): "another" | "same" | "holds" {
  let stat: Stats | BigIntStats | undefined;
  try {
    stat = lstatSync(absolute, { throwIfNoEntry: false });
    if (stat !== undefined && stat.ino > plainInodesUpTo)
      stat = lstatSync(absolute, { bigint: true, throwIfNoEntry: false });
  } catch {
    stat = undefined;
  }
  if (stat === undefined || kindOfMode(Number(stat.mode)) !== "directory") return "another";
  if (typeof stat.ino === "bigint") {
    const exact = stat as BigIntStats;
    return exact.ino !== listing.ino ? "another" : stillHolds(listing, exact) ? "holds" : "same";
  }
  const plain = stat as Stats;
  if (!sameInode(listing.ino, Math.floor(plain.ino / 2 ** 32), plain.ino % 2 ** 32)) return "another";
  const holds =
    listingTrusted(listing) && sameTime(listing.mtimeNs, plain.mtimeMs) && sameTime(listing.ctimeNs, plain.ctimeMs);
  return holds ? "holds" : "same";
}
