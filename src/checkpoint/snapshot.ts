import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, readSync } from "node:fs";
import type { Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { lstat, lstatSync, open, openSync, readlink } from "../core/named-fs.js";
import type { FileSnapshot } from "../core/events.js";
import { throwIfOutOfDescriptors } from "../core/out-of-descriptors.js";
import { forEachLimited, mapLimited } from "../core/bounded-concurrency.js";
import { confine, placeLexically, type ConfinedPath, type ParentLooks } from "./confine.js";
import { HeldWorkspace, OUTSIDE } from "./held-workspace.js";
import { stampOf, type FileStamp } from "./file-stamps.js";

export interface SnapshotLimits {
  /** A file larger than this is recorded `skipped: too_large`. */
  maxFileBytes: number;
  /** A folder with more entries than this below it is captured up to the limit, the folder recorded `over_budget`. */
  maxDirectoryEntries: number;
  /** Likewise for the total bytes of the files below a folder. */
  maxDirectoryBytes: number;
  /** Files read and hashed at once. */
  concurrency: number;
}

/** What the named paths are now: one record per path, and the bytes of every `blob` record by hash. */
export interface Snapshot {
  files: FileSnapshot[];
  blobs: Map<string, Buffer>;
  /** What a stat said of each file read, by path, unless it had just changed (file-stamps.ts). */
  stamps?: Map<string, FileStamp>;
  /**
   * The files read (`blob` records) that had other names too, by the fstat of their reading (a link count above
   * one): what a rewind that replaces them takes out of a hard-link group (src/rewind/hard-link-splits.ts).
   */
  linked?: Set<string>;
}

/** What a stat says of an entry's owner and group (numbers; a BigIntStats' too). */
type Owned = { uid: number | bigint; gid: number | bigint };

/** The owner and group a snapshot records (docs/ARCHITECTURE.md, "Workspace index"). */
export function ownerOf(info: Owned): { uid: number; gid: number } {
  return { uid: Number(info.uid), gid: Number(info.gid) };
}

/** A regular file found by the walk (workspace-relative), read and hashed later in parallel. */
type FileToRead = { path: string };

/**
 * Reads the current state of `paths` without following any final symlink and without ever
 * touching anything outside the workspace, even while code in it swaps folders for symlinks:
 * every entry is reached through its folder held open and checked (docs/ARCHITECTURE.md,
 * "Confinement"). Best-effort per path: a failure becomes a `skipped` record with its reason,
 * never an exception.
 */
export async function snapshotPaths(
  realWorkspace: string,
  givenWorkspace: string,
  paths: readonly string[],
  limits: SnapshotLimits,
): Promise<Snapshot> {
  const held = await HeldWorkspace.open(realWorkspace);
  try {
    return await snapshotHeld(held, givenWorkspace, paths, limits);
  } finally {
    await held.close();
  }
}

async function snapshotHeld(
  held: HeldWorkspace,
  givenWorkspace: string,
  paths: readonly string[],
  limits: SnapshotLimits,
): Promise<Snapshot> {
  const records = new Map<string, FileSnapshot>();
  const seen = new Set<string>(); // one record per path, the first way it was reached
  const toRead: FileToRead[] = [];
  const note = (record: FileSnapshot) => {
    if (seen.has(record.path)) return;
    seen.add(record.path);
    records.set(record.path, record);
  };
  const queueRead = (file: FileToRead) => {
    if (seen.has(file.path)) return;
    seen.add(file.path);
    records.set(file.path, { path: file.path, kind: "absent" }); // holds its place; replaced once read
    toRead.push(file);
  };

  // Placing and stat-ing each path is independent: do it `concurrency` at a time (one by one, it was most
  // of a 1000-file rewind's plan: bench "rewind 1000 files @10k files vs shadow git"), then decide in the
  // caller's order.
  const looks: ParentLooks = new Map(); // each entry is then reached through `held`, checked at that moment
  const looked = await mapLimited(paths, limits.concurrency, lookUp.bind(null, held, givenWorkspace, looks));
  for (const found of looked) {
    if (!("info" in found) && !("error" in found)) {
      note({ path: found.place.path, kind: "skipped", reason: "outside_workspace" });
      continue;
    }
    const { path } = found.place;
    if (seen.has(path)) continue;
    if ("error" in found) {
      // ENOTDIR: a folder above it is a file now, so nothing is there (a kind change), not an unreadable entry.
      if (found.error === "ENOENT" || found.error === "ENOTDIR") note({ path, kind: "absent" });
      else note({ path, kind: "skipped", reason: "unreadable", detail: found.error });
      continue;
    }
    if (found.info.isDirectory()) await walkDirectory(held, path, found.info, limits, note, queueRead);
    else await classifyEntry(held, path, found.info, limits, note, queueRead);
  }

  const blobs = new Map<string, Buffer>();
  const stamps = new Map<string, FileStamp>();
  const linked = new Set<string>();
  await forEachLimited(toRead, limits.concurrency, async (file) => {
    const { record, bytes, stamp, names } = await readRegularFile(held, file, limits.maxFileBytes);
    records.set(file.path, record);
    if (bytes && record.kind === "blob") blobs.set(record.blob, bytes);
    if (stamp) stamps.set(file.path, stamp);
    if (record.kind === "blob" && names !== undefined && names > 1) linked.add(file.path);
  });
  return { files: [...records.values()], blobs, stamps, linked };
}

type LookedUp =
  | { place: { inside: boolean; path: string } }
  | { place: Extract<ConfinedPath, { inside: true }>; info: Stats }
  | { place: Extract<ConfinedPath, { inside: true }>; error: string };

async function lookUp(
  held: HeldWorkspace,
  givenWorkspace: string,
  looks: ParentLooks,
  given: string,
): Promise<LookedUp> {
  // With folders held, the folder opened is checked anyway: its parents need a look only when it fails.
  const holding = HeldWorkspace.holdsFolders;
  const place = holding
    ? placeLexically(held.realWorkspace, given, givenWorkspace)
    : await confine(held.realWorkspace, given, givenWorkspace, looks);
  if (!place.inside) return { place };
  try {
    // Held folders: the lstat at once, not a thread-pool round trip (docs/ARCHITECTURE.md, "Batched file work").
    const info = holding
      ? held.atSync(place.path, (where) => lstatSync(where))
      : await held.at(place.path, (where) => lstat(where));
    return info === OUTSIDE ? { place: { inside: false, path: place.path } } : { place, info };
  } catch (error) {
    throwIfOutOfDescriptors(error);
    if (holding && !(await confine(held.realWorkspace, given, givenWorkspace, looks)).inside)
      return { place: { inside: false, path: place.path } }; // e.g. a dangling link among its parents
    return { place, error: (error as NodeJS.ErrnoException).code ?? String(error) };
  }
}

function classifyEntry(
  held: HeldWorkspace,
  path: string,
  info: { isFile(): boolean; isSymbolicLink(): boolean; size: number } & Owned,
  limits: SnapshotLimits,
  note: (r: FileSnapshot) => void,
  queueRead: (file: FileToRead) => void,
): Promise<void> | void {
  if (info.isSymbolicLink()) return recordLink(held, path, note, ownerOf(info));
  if (!info.isFile()) return note({ path, kind: "skipped", reason: "not_a_regular_file" });
  if (info.size > limits.maxFileBytes)
    return note({
      path,
      kind: "skipped",
      reason: "too_large",
      detail: `${info.size} bytes > maxFileBytes ${limits.maxFileBytes}`,
    });
  queueRead({ path });
}

async function recordLink(
  held: HeldWorkspace,
  path: string,
  note: (r: FileSnapshot) => void,
  owner: { uid: number; gid: number },
): Promise<void> {
  try {
    const target = await held.at(path, (where) => readlink(where));
    if (target === OUTSIDE) note({ path, kind: "skipped", reason: "outside_workspace" });
    else note({ path, kind: "symlink", target, ...owner });
  } catch (error) {
    throwIfOutOfDescriptors(error);
    note({
      path,
      kind: "skipped",
      reason: "unreadable",
      detail: (error as NodeJS.ErrnoException).code ?? String(error),
    });
  }
}

/**
 * Captures a folder as itself plus everything below it, so a tool that deletes the folder can
 * be rewound. Symlinks inside are recorded as links and never entered. Past the entry or byte
 * budget the walk stops and the folder is recorded `over_budget`: what was captured is kept, and
 * a rewind says the folder could not be fully restored.
 */
async function walkDirectory(
  held: HeldWorkspace,
  path: string,
  folder: { mode: number } & Owned,
  limits: SnapshotLimits,
  note: (r: FileSnapshot) => void,
  queueRead: (file: FileToRead) => void,
): Promise<void> {
  let entries = 0;
  let bytes = 0;
  const found: FileSnapshot[] = [{ path, kind: "directory", mode: folder.mode & 0o7777, ...ownerOf(folder) }];
  const queue: FileToRead[] = [{ path }];
  const reads: FileToRead[] = [];
  let overBudget: string | undefined;
  const unlisted: string[] = []; // folders that could not be listed: they and the folders above are partial
  walk: while (queue.length > 0) {
    const dir = queue.shift()!;
    let listed;
    try {
      listed = await held.list(dir.path);
    } catch (error) {
      throwIfOutOfDescriptors(error);
      const code = (error as NodeJS.ErrnoException).code;
      const detail = code === "ELOOP" ? "became a symlink while being captured" : (code ?? String(error));
      found.push({ path: dir.path, kind: "skipped", reason: "unreadable", detail });
      unlisted.push(dir.path);
      continue;
    }
    if (listed === OUTSIDE) {
      found.push({ path: dir.path, kind: "skipped", reason: "outside_workspace" });
      unlisted.push(dir.path);
      continue;
    }
    for (const { name, info, error } of listed) {
      const child = { path: dir.path === "." ? name : `${dir.path}/${name}` };
      if (!info) {
        if (error !== "ENOENT") found.push({ path: child.path, kind: "skipped", reason: "unreadable", detail: error });
        continue;
      }
      if (++entries > limits.maxDirectoryEntries) {
        overBudget = `more than ${limits.maxDirectoryEntries} entries (maxDirectoryEntries)`;
        break walk;
      }
      if (info.isDirectory()) {
        found.push({ path: child.path, kind: "directory", mode: info.mode & 0o7777, ...ownerOf(info) });
        queue.push(child);
        continue;
      }
      if (info.isFile() && info.size <= limits.maxFileBytes) {
        bytes += info.size;
        if (bytes > limits.maxDirectoryBytes) {
          overBudget = `more than ${limits.maxDirectoryBytes} bytes (maxDirectoryBytes)`;
          break walk;
        }
      }
      const collect = (r: FileSnapshot) => found.push(r);
      await classifyEntry(held, child.path, info, limits, collect, (file) => reads.push(file));
    }
  }
  if (overBudget) found[0] = { path, kind: "skipped", reason: "over_budget", detail: overBudget };
  else
    for (const record of found)
      if (record.kind === "directory" && !unlisted.some((u) => u === record.path || u.startsWith(`${record.path}/`)))
        record.complete = true; // everything below it is listed: a rewind to before it removes the rest
  for (const record of found) note(record);
  for (const file of reads) queueRead(file);
}

/** `names`: the link count fstat gave the file read. */
type FileRead = { record: FileSnapshot; bytes?: Buffer; stamp?: FileStamp | undefined; names?: number };

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** Files up to this size are read with synchronous calls where folders are held (readRegularFileNow). */
const SYNC_READ_MAX = 64 * 1024;

/** Reads one file through a descriptor opened without following links, so what is hashed is what was checked. */
async function readRegularFile(held: HeldWorkspace, file: FileToRead, maxFileBytes: number): Promise<FileRead> {
  if (HeldWorkspace.holdsFolders) {
    const now = readRegularFileNow(held, file.path, maxFileBytes);
    if (now !== undefined) return now;
  }
  const path = file.path;
  let fh;
  try {
    fh = await held.at(path, (where) => open(where, READ_FLAGS));
    if (fh === OUTSIDE) return { record: { path, kind: "skipped", reason: "outside_workspace" } };
  } catch (error) {
    return notOpened(path, error);
  }
  try {
    const lookedAt = Date.now();
    const info = await fh.stat();
    return skippedByStat(path, info, maxFileBytes) ?? keptFile(path, info, await readWhole(fh, info.size), lookedAt);
  } catch (error) {
    return unreadable(path, error);
  } finally {
    await fh.close();
  }
}

/**
 * {@link readRegularFile} with synchronous calls (open, fstat, read, close through the held folder) for a file of
 * at most SYNC_READ_MAX bytes: their time is less than the thread-pool round trips of the async forms, most of a
 * capture of one small file and of a 1,000-file rewind's plan (docs/ARCHITECTURE.md, "Batched file work").
 * Undefined, having read nothing, for a larger file: the caller reads it the asynchronous way.
 */
function readRegularFileNow(held: HeldWorkspace, path: string, maxFileBytes: number): FileRead | undefined {
  let fd;
  try {
    fd = held.atSync(path, (where) => openSync(where, READ_FLAGS));
    if (fd === OUTSIDE) return { record: { path, kind: "skipped", reason: "outside_workspace" } };
  } catch (error) {
    return notOpened(path, error);
  }
  try {
    const lookedAt = Date.now();
    const info = fstatSync(fd);
    const skipped = skippedByStat(path, info, maxFileBytes);
    if (skipped) return skipped;
    return info.size > SYNC_READ_MAX ? undefined : keptFile(path, info, readWholeNow(fd, info.size), lookedAt);
  } catch (error) {
    return unreadable(path, error);
  } finally {
    closeSync(fd);
  }
}

function notOpened(path: string, error: unknown): FileRead {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT" || code === "ENOTDIR") return { record: { path, kind: "absent" } };
  if (code === "ELOOP")
    return { record: { path, kind: "skipped", reason: "unreadable", detail: "became a symlink while being captured" } };
  return unreadable(path, error);
}

function unreadable(path: string, error: unknown): FileRead {
  throwIfOutOfDescriptors(error);
  const detail = (error as NodeJS.ErrnoException).code ?? String(error);
  return { record: { path, kind: "skipped", reason: "unreadable", detail } };
}

/** The record of an open file its fstat (`info`) already settles: not a regular file, or too large to keep. */
function skippedByStat(path: string, info: Stats, maxFileBytes: number): FileRead | undefined {
  if (!info.isFile()) return { record: { path, kind: "skipped", reason: "not_a_regular_file" } };
  if (info.size <= maxFileBytes) return undefined;
  const detail = `${info.size} bytes > maxFileBytes ${maxFileBytes}`;
  return { record: { path, kind: "skipped", reason: "too_large", detail } };
}

/** The record of a file read whole: its bytes, hashed, and the stamp of what fstat said of it. */
function keptFile(path: string, info: Stats, bytes: Buffer, lookedAt: number): FileRead {
  const blob = createHash("sha256").update(bytes).digest("hex");
  const record: FileSnapshot = { path, kind: "blob", blob, bytes: bytes.length, mode: info.mode & 0o7777 };
  return { record: { ...record, ...ownerOf(info) }, bytes, stamp: stampOf(info, blob, lookedAt), names: info.nlink };
}

/**
 * Reads the `size` bytes fstat just reported, in one read where the OS allows (FileHandle.readFile
 * would fstat again, then read once more to find the end). A file that changes while being
 * captured is being written by something else; what is stored is then a prefix of it, hashed as
 * stored, so the snapshot is still exact about the bytes it holds.
 */
async function readWhole(fh: FileHandle, size: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(size);
  let total = 0;
  while (total < size) {
    const { bytesRead } = await fh.read(buffer, total, size - total, total);
    if (bytesRead === 0) break; // shrank meanwhile
    total += bytesRead;
  }
  return total === size ? buffer : buffer.subarray(0, total);
}

/** {@link readWhole} with synchronous reads. */
function readWholeNow(fd: number, size: number): Buffer {
  const buffer = Buffer.allocUnsafe(size);
  let total = 0;
  while (total < size) {
    const bytesRead = readSync(fd, buffer, total, size - total, total);
    if (bytesRead === 0) break; // shrank meanwhile
    total += bytesRead;
  }
  return total === size ? buffer : buffer.subarray(0, total);
}
