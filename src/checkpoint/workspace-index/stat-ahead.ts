import { lstatSync } from "../../core/named-fs.js";
import { HelperThread } from "../../core/helper-thread.js";
import { hasEscapedBytes } from "../../core/byte-names.js";
import type { FolderListing } from "./index-entry.js";
import { kindOfMode, type Lstat, stillHolds } from "./stat-entries.js";
import { depthOf, parentOf } from "./tree-paths.js";

// A later scan lstats every tracked path, and one thread cannot lstat 50k paths as fast as `git status` does
// with its threads: Node's lstat costs twice the system call, and each BigIntStats kept for the walk is garbage
// to collect. So, when the index knows the folders' listings, two helper threads lstat the names of the folders
// whose listing still holds, each half of them, into one array of numbers, while this thread waits on its event
// loop; the walk then takes those stats instead of calling lstat (docs/ARCHITECTURE.md, "Workspace index",
// stats ahead).

/** Known entries from which a scan stats ahead: below it, the threads' messages cost more than they save. */
export const STAT_AHEAD_FROM = 4096;

// Per name: a flag (1: statted; 0: not, the walk lstats it itself), then the fields of Lstat in this order.
const FIELDS = 9;
const HELPERS = 2;

interface Job {
  /** Absolute folder paths, and the names to lstat in each (null: left to the walk). */
  folders: string[];
  names: (string | null)[][];
}

const SOURCE = `
const { parentPort } = require("node:worker_threads");
const { lstatSync } = require("node:fs");
parentPort.on("message", ({ id, job }) => {
  let count = 0;
  for (const names of job.names) count += names.length;
  const answer = new BigInt64Array(count * ${FIELDS});
  let at = 0;
  job.folders.forEach((folder, f) => {
    for (const name of job.names[f]) {
      if (name !== null) {
        let s;
        try { s = lstatSync(folder + "/" + name, { bigint: true, throwIfNoEntry: false }); } catch { s = undefined; }
        if (s !== undefined) {
          answer[at] = 1n; answer[at + 1] = s.mode; answer[at + 2] = s.size; answer[at + 3] = s.mtimeNs;
          answer[at + 4] = s.ctimeNs; answer[at + 5] = s.ino; answer[at + 6] = s.nlink; answer[at + 7] = s.uid;
          answer[at + 8] = s.gid;
        }
      }
      at += ${FIELDS};
    }
  });
  parentPort.postMessage({ id, answer }, [answer.buffer]);
});
`;

const helpers = Array.from({ length: HELPERS }, () => new HelperThread<Job, BigInt64Array>(SOURCE));

// A name whose path the OS must be handed as bytes, or in steps (named-fs.ts), is left to the walk.
const LONGEST_PATH = 1000;

/** The stats taken ahead, by folder: the walk asks for a folder's while its listing is the one they were taken for. */
export class StatsAhead {
  constructor(private readonly byFolder: Map<string, { listing: FolderListing; stats: BigInt64Array; at: number }>) {}

  /** The stat of the `index`th name of `listing` (the folder at `path`), when it was taken ahead. */
  of(path: string, listing: FolderListing, index: number): Lstat | undefined {
    const taken = this.byFolder.get(path);
    if (taken === undefined || taken.listing !== listing) return undefined;
    const at = taken.at + index * FIELDS;
    const s = taken.stats;
    if (s[at] !== 1n) return undefined;
    return {
      mode: s[at + 1]!,
      size: s[at + 2]!,
      mtimeNs: s[at + 3]!,
      ctimeNs: s[at + 4]!,
      ino: s[at + 5]!,
      nlink: s[at + 6]!,
      uid: s[at + 7]!,
      gid: s[at + 8]!,
    };
  }
}

/**
 * Stats the names of every folder in `folders` whose listing still holds, on the helper threads. A folder is
 * lstat'ed here first, shallowest first, and its names are statted only when it and every folder above it is
 * still the folder listed (a folder, the same inode): no path is reached through a folder that became a link
 * since the last walk. Undefined when the threads are not there.
 */
export async function statAhead(
  workspace: string,
  folders: ReadonlyMap<string, FolderListing>,
  root: Lstat | undefined,
): Promise<StatsAhead | undefined> {
  const held = heldFolders(workspace, folders, root);
  if (held.length === 0) return undefined;
  let total = 0;
  for (const [, listing] of held) total += listing.names.length;
  const jobs: Job[] = [];
  const parts: [string, FolderListing][][] = [];
  let part: [string, FolderListing][] = [];
  let inPart = 0;
  for (const folder of held) {
    part.push(folder);
    inPart += folder[1].names.length;
    if (inPart >= total / HELPERS && parts.length < HELPERS - 1) {
      parts.push(part);
      part = [];
      inPart = 0;
    }
  }
  parts.push(part);
  for (const folders of parts) {
    const job: Job = { folders: [], names: [] };
    for (const [path, listing] of folders) {
      const absolute = path === "" ? workspace : `${workspace}/${path}`;
      job.folders.push(absolute);
      job.names.push(
        listing.names.map((name) =>
          hasEscapedBytes(name) || absolute.length + name.length > LONGEST_PATH ? null : name,
        ),
      );
    }
    jobs.push(job);
  }
  const answers = await Promise.all(jobs.map((job, i) => helpers[i]!.ask(job)));
  const byFolder = new Map<string, { listing: FolderListing; stats: BigInt64Array; at: number }>();
  answers.forEach((stats, i) => {
    if (stats === undefined) return;
    let at = 0;
    for (const [path, listing] of parts[i]!) {
      byFolder.set(path, { listing, stats, at });
      at += listing.names.length * FIELDS;
    }
  });
  return byFolder.size === 0 ? undefined : new StatsAhead(byFolder);
}

/**
 * The folders whose listing still holds, by an lstat of each (not of their names), shallowest first: a folder is
 * looked at only inside folders that are still the ones listed (a folder, the same inode), and itself only when it
 * is too. A folder's listing may have changed (a file added) while the ones below it still hold.
 */
function heldFolders(
  workspace: string,
  folders: ReadonlyMap<string, FolderListing>,
  root: Lstat | undefined,
): [string, FolderListing][] {
  const same = new Set<string>();
  const held: [string, FolderListing][] = [];
  const order = [...folders.keys()].sort((a, b) => depthOf(a) - depthOf(b));
  for (const path of order) {
    const listing = folders.get(path)!;
    if (path !== "" && !same.has(parentOf(path))) continue;
    const absolute = path === "" ? workspace : `${workspace}/${path}`;
    if (hasEscapedBytes(absolute) || absolute.length > LONGEST_PATH) continue;
    let stat: Lstat | undefined = root;
    if (path !== "") {
      try {
        stat = lstatSync(absolute, { bigint: true, throwIfNoEntry: false });
      } catch {
        stat = undefined;
      }
    }
    if (stat === undefined || kindOfMode(Number(stat.mode)) !== "directory" || stat.ino !== listing.ino) continue;
    same.add(path);
    if (stillHolds(listing, stat)) held.push([path, listing]);
  }
  return held;
}
