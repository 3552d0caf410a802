import { createHash } from "node:crypto";
import { closeSync, constants, readFileSync, type Stats } from "node:fs";
// Through named-fs, as every call on a workspace name: a name that is not UTF-8 handed to node:fs as a string
// becomes another name (U+FFFD), found absent, and the path wrongly reported as changed during the rewind
// (docs/ARCHITECTURE.md, "Names and depths").
import { lstat, lstatSync, open, openSync, readdir, readdirSync, readlink, readlinkSync } from "../core/named-fs.js";
import type { FileSnapshot } from "../core/events.js";

/**
 * The states each path may be in just before a rewind (or an undo, or a roll-back) replaces or deletes it: as
 * the plan found it (its before-state, kept for undo), or as the operation makes it (already done: recovery runs
 * the step again). Only paths the plan found are checked; one below a link or a file the plan replaces has no
 * state of its own to check. Anything else is a change made after the conflict check, which the write would lose
 * (docs/ARCHITECTURE.md, "Conflicts").
 */
export function plannedStates(
  before: readonly FileSnapshot[],
  becomes: readonly FileSnapshot[],
): Map<string, FileSnapshot[]> {
  const states = new Map<string, FileSnapshot[]>();
  for (const record of before) states.set(record.path, [...(states.get(record.path) ?? []), record]);
  for (const record of becomes) states.get(record.path)?.push(record);
  return states;
}

/**
 * True when the entry at `where` (a name inside its held folder: the folder the write will use) is in one of
 * its planned states; a folder about to be removed (`deep`) is looked into, every entry below it too. Content is
 * hashed through a descriptor opened without following links. What remains is the time between this look and
 * the write itself (a rename, an unlink): docs/ARCHITECTURE.md, "Conflicts", says how long it is.
 */
export async function stillAsPlanned(
  where: string,
  path: string,
  states: ReadonlyMap<string, readonly FileSnapshot[]>,
  deep: boolean,
): Promise<boolean> {
  const wanted = states.get(path);
  if (wanted === undefined) return true;
  let info: Stats;
  try {
    info = await lstat(where);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return wanted.some((r) => r.kind === "absent");
    throw error;
  }
  for (const record of wanted) {
    if (!(await entryIs(where, info, record))) continue;
    if (!deep || record.kind !== "directory") return true;
    return belowAsPlanned(where, path, states);
  }
  return false;
}

async function belowAsPlanned(
  where: string,
  path: string,
  states: ReadonlyMap<string, readonly FileSnapshot[]>,
): Promise<boolean> {
  for (const name of await readdir(where)) {
    const below = path === "." ? name : `${path}/${name}`;
    if (!states.has(below)) return false; // made after the plan looked
    if (!(await stillAsPlanned(`${where}/${name}`, below, states, true))) return false;
  }
  return true;
}

async function entryIs(where: string, info: Stats, record: FileSnapshot): Promise<boolean> {
  switch (record.kind) {
    case "absent":
      return false;
    case "skipped":
      return true; // its content was not read (too large, unreadable): nothing to compare, as the plan said
    case "symlink":
      return info.isSymbolicLink() && (await readlink(where)) === record.target;
    case "directory":
      return info.isDirectory() && (info.mode & 0o7777) === record.mode;
    case "blob":
      if (!info.isFile() || info.size !== record.bytes || (info.mode & 0o7777) !== record.mode) return false;
      return (await contentHash(where)) === record.blob;
  }
}

async function contentHash(where: string): Promise<string | undefined> {
  let fh;
  try {
    fh = await open(where, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined; // replaced by a link or gone since the lstat: not as planned
  }
  try {
    // Its size matched the record's (at most the undo's file limit): read whole, in one call where it can.
    return createHash("sha256")
      .update(await fh.readFile())
      .digest("hex");
  } finally {
    await fh.close();
  }
}

/** {@link stillAsPlanned} with synchronous calls, for a batch acting on many paths in one turn of the event loop. */
export function stillAsPlannedSync(
  where: string,
  path: string,
  states: ReadonlyMap<string, readonly FileSnapshot[]>,
  deep: boolean,
): boolean {
  const wanted = states.get(path);
  if (wanted === undefined) return true;
  let info: Stats;
  try {
    info = lstatSync(where);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return wanted.some((r) => r.kind === "absent");
    throw error;
  }
  for (const record of wanted) {
    if (!entryIsSync(where, info, record)) continue;
    if (!deep || record.kind !== "directory") return true;
    for (const name of readdirSync(where)) {
      const below = path === "." ? name : `${path}/${name}`;
      if (!states.has(below) || !stillAsPlannedSync(`${where}/${name}`, below, states, true)) return false;
    }
    return true;
  }
  return false;
}

function entryIsSync(where: string, info: Stats, record: FileSnapshot): boolean {
  switch (record.kind) {
    case "absent":
      return false;
    case "skipped":
      return true;
    case "symlink":
      return info.isSymbolicLink() && readlinkSync(where) === record.target;
    case "directory":
      return info.isDirectory() && (info.mode & 0o7777) === record.mode;
    case "blob":
      if (!info.isFile() || info.size !== record.bytes || (info.mode & 0o7777) !== record.mode) return false;
      return contentHashSync(where) === record.blob;
  }
}

function contentHashSync(where: string): string | undefined {
  let fd;
  try {
    fd = openSync(where, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined; // replaced by a link or gone since the lstat: not as planned
  }
  try {
    return createHash("sha256").update(readFileSync(fd)).digest("hex");
  } finally {
    closeSync(fd);
  }
}
