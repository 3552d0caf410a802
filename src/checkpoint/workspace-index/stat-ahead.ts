import { lstatSync } from "../../core/named-fs.js";
import { HelperThread } from "../../core/helper-thread.js";
import { hasEscapedBytes } from "../../core/byte-names.js";
import type { FolderListing } from "./index-entry.js";
import { kindOfMode, type Lstat, stillHolds } from "./stat-entries.js";
import { parentOf } from "./tree-paths.js";

// A later scan lstats every tracked path, and one thread cannot lstat 50k paths as fast as `git status` does
// with its threads: Node's lstat costs twice the system call, and each BigIntStats kept for the walk is garbage
// to collect. So, when the index knows the folders' listings, two helper threads lstat the names of the folders
// whose listing still holds, in jobs of a few thousand names taken in turn, into arrays of numbers; the walk
// starts at once and takes those stats instead of calling lstat, waiting for a folder's job where it is not back
// yet (docs/ARCHITECTURE.md, "Workspace index", stats ahead).

/** Known entries from which a scan stats ahead: below it, the threads' messages cost more than they save. */
export const STAT_AHEAD_FROM = 4096;

// Per name: a flag (1: statted; 0: not, the walk lstats it itself), then the fields of Lstat in this order.
const FIELDS = 9;
const HELPERS = 2;
// Names per job: the first is back while the walk still has most of the tree ahead of it.
const JOB_NAMES = 2048;

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

interface Taken {
  listing: FolderListing;
  /** Where the folder's names start in its job's answer. */
  at: number;
  stats?: BigInt64Array | undefined;
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

  /** The stat of the `index`th name of `listing` (the folder at `path`), when it was taken ahead. */
  of(path: string, listing: FolderListing, index: number): Lstat | undefined {
    const taken = this.byFolder.get(path);
    if (taken?.stats === undefined || taken.listing !== listing) return undefined;
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
 * Sends the names of every folder in `folders` whose listing still holds to the helper threads, to be lstat'ed
 * there. A folder is lstat'ed here first, parents first, and its names are sent only when it and every folder
 * above it is still the folder listed (a folder, the same inode): no path is reached through a folder that
 * became a link since the last walk. Jobs go out as the folders are checked; undefined when no folder held.
 */
export function statAhead(
  workspace: string,
  folders: ReadonlyMap<string, FolderListing>,
  root: Lstat | undefined,
): StatsAhead | undefined {
  const ahead = new StatsAhead();
  let job: Job = { folders: [], names: [] };
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
    job = { folders: [], names: [] };
    inJob = [];
    names = 0;
  };
  for (const [path, listing, absolute] of heldFolders(workspace, folders, root)) {
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
): Generator<[string, FolderListing, string]> {
  const same = new Set<string>();
  // A walk sets a folder's listing before those of the folders in it: a folder met before its parent is left out.
  for (const [path, listing] of folders) {
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
    if (stillHolds(listing, stat)) yield [path, listing, absolute];
  }
}
