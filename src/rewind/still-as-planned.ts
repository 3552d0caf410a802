import { createHash } from "node:crypto";
import { closeSync, constants, readFileSync, type Stats } from "node:fs";
// Through named-fs, as every call on a workspace name: a name that is not UTF-8 handed to node:fs as a string
// becomes another name (U+FFFD), found absent, and the path wrongly reported as changed during the rewind
// (docs/ARCHITECTURE.md, "Names and depths").
import { lstat, lstatSync, open, openSync, readdir, readdirSync, readlink, readlinkSync } from "../core/named-fs.js";
import type { FileSnapshot, FileState } from "../core/events.js";
import { stillStamped, type FileStamp } from "../checkpoint/file-stamps.js";
import { yieldIfLong } from "../core/time-slices.js";

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

/** A path found, just before its write, in none of its planned states (docs/ARCHITECTURE.md, "Conflicts"). */
export interface LateChange {
  /** The path found changed: the one about to be written, or one below the folder about to be removed. */
  path: string;
  /** What the plan found there (its undo record); undefined when the plan found nothing there (made since). */
  planned: FileSnapshot | undefined;
  /** What it is now. */
  actual: FileState;
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
  return (await lateChange(where, path, states, deep)) === undefined;
}

/** As {@link stillAsPlanned}, but says what changed: undefined when the entry (and all below) is as planned. */
export async function lateChange(
  where: string,
  path: string,
  states: ReadonlyMap<string, readonly FileSnapshot[]>,
  deep: boolean,
): Promise<LateChange | undefined> {
  const wanted = states.get(path);
  if (wanted === undefined) return undefined;
  const changed = async () => ({ path, planned: wanted[0], actual: await stateAt(where, path) });
  let info: Stats;
  try {
    info = await lstat(where);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
    return wanted.some((r) => r.kind === "absent") ? undefined : changed();
  }
  for (const record of wanted) {
    if (!(await entryIs(where, info, record))) continue;
    if (!deep || record.kind !== "directory") return undefined;
    return changeBelow(where, path, states);
  }
  return changed();
}

async function changeBelow(
  where: string,
  path: string,
  states: ReadonlyMap<string, readonly FileSnapshot[]>,
): Promise<LateChange | undefined> {
  for (const name of await readdir(where)) {
    const below = path === "." ? name : `${path}/${name}`;
    const at = `${where}/${name}`;
    // made after the plan looked
    if (!states.has(below)) return { path: below, planned: undefined, actual: await stateAt(at, below) };
    const change = await lateChange(at, below, states, true);
    if (change !== undefined) return change;
  }
  return undefined;
}

/** What the entry at `where` is now, as a state to report (a file too large to hash is `unknown`). */
async function stateAt(where: string, path: string): Promise<FileState> {
  let info: Stats;
  try {
    info = await lstat(where);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { path, kind: "absent" };
    return { path, kind: "unknown", reason: code ?? "unreadable" };
  }
  const mode = info.mode & 0o7777;
  if (info.isSymbolicLink()) return { path, kind: "symlink", target: await readlink(where) };
  if (info.isDirectory()) return { path, kind: "directory", mode };
  if (!info.isFile()) return { path, kind: "unknown", reason: "not_a_regular_file" };
  if (info.size > REPORTED_HASH_MAX_BYTES) return { path, kind: "unknown", reason: "too_large" };
  const sha256 = await contentHash(where);
  return sha256 === undefined ? { path, kind: "absent" } : { path, kind: "file", sha256, mode };
}

/** A file found changed is hashed for the report up to this size; a larger one is reported `unknown`. */
const REPORTED_HASH_MAX_BYTES = 64 * 1024 * 1024;

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

/**
 * {@link stillAsPlanned} with synchronous calls, for a batch acting on many paths in one turn of the event loop.
 * A file whose stat is still the one the plan stamped when it hashed it (`stamps`, file-stamps.ts) is taken as
 * those bytes without reading it again.
 */
export function stillAsPlannedSync(
  where: string,
  path: string,
  states: ReadonlyMap<string, readonly FileSnapshot[]>,
  deep: boolean,
  stamps?: ReadonlyMap<string, FileStamp>,
): boolean {
  const found = lookAtOnce(where, path, states, deep, stamps);
  if (typeof found === "boolean") return found;
  for (const name of readdirSync(where)) {
    const below = path === "." ? name : `${path}/${name}`;
    if (!states.has(below) || !stillAsPlannedSync(`${where}/${name}`, below, states, true, stamps)) return false;
  }
  return true;
}

/**
 * {@link stillAsPlannedSync} of a folder about to be removed, everything below it looked at, the event loop given a
 * turn between entries once a slice has run long: the asynchronous form made a round trip for each call, and read
 * and hashed again every file the plan had just hashed (docs/ARCHITECTURE.md, "Batched file work").
 */
export async function stillAsPlannedSliced(
  where: string,
  path: string,
  states: ReadonlyMap<string, readonly FileSnapshot[]>,
  stamps?: ReadonlyMap<string, FileStamp>,
): Promise<boolean> {
  const found = lookAtOnce(where, path, states, true, stamps);
  if (typeof found === "boolean") return found;
  for (const name of readdirSync(where)) {
    const below = path === "." ? name : `${path}/${name}`;
    if (!states.has(below) || !(await stillAsPlannedSliced(`${where}/${name}`, below, states, stamps))) return false;
    await yieldIfLong();
  }
  return true;
}

/** The entry itself compared: true or false, or "below" for a planned folder whose entries are still to look at. */
function lookAtOnce(
  where: string,
  path: string,
  states: ReadonlyMap<string, readonly FileSnapshot[]>,
  deep: boolean,
  stamps: ReadonlyMap<string, FileStamp> | undefined,
): boolean | "below" {
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
    if (!entryIsSync(where, info, record, stamps?.get(path))) continue;
    return deep && record.kind === "directory" ? "below" : true;
  }
  return false;
}

function entryIsSync(where: string, info: Stats, record: FileSnapshot, stamp: FileStamp | undefined): boolean {
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
      return stillStamped(info, stamp, record.blob) || contentHashSync(where) === record.blob;
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
