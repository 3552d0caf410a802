import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { open, readlink, type FileHandle } from "node:fs/promises";
import type { LockedSession } from "../../backend/types.js";
import { forEachLimited } from "../../core/bounded-concurrency.js";
import { markBlobsInFlight } from "../../blobs/in-flight.js";
import { entryOf, walkWorkspace, type WalkLimits } from "./walk.js";
import { sameContent, sameStat, type IndexEntry, type WorkspaceIndex } from "./index-entry.js";
import type { IgnoreRules } from "./ignore-rules.js";

export interface ScanOptions extends WalkLimits {
  /** Files read, hashed and stored at once. */
  concurrency: number;
}

/** What a scan found against the index it started from. */
export interface ScanResult {
  /** The index after the scan (its `entries` replaced; generation unchanged until saved). */
  index: WorkspaceIndex;
  /** Paths whose entry is new or changed (stat or content): what the index record must be told. */
  set: string[];
  /** Paths the previous index held that are gone. */
  removed: string[];
  /** Paths whose content, mode, kind or link target changed, were created or removed: a command's changes. */
  changed: string[];
  /** Blobs this scan wrote (to delete if what should reference them is never written). */
  written: string[];
}

// Timestamps within this much of a scan are not trusted to tell a later change (git's racy rule):
// the coarsest common file-time granularity (FAT's 2 s) also covers the kernel's coarse clock tick.
const RACY_WINDOW_NS = 2_000_000_000n;

/**
 * Brings the index up to date with the workspace: a stat walk, then every entry that is new,
 * whose stat changed, or that was racy is read and hashed through a descriptor opened without
 * following links, and its bytes stored as a blob. Unchanged entries cost one lstat. Must run
 * under the session lock: the blobs written are referenced only once the caller saves the index.
 */
export async function scanWorkspace(
  locked: LockedSession,
  previous: WorkspaceIndex,
  rules: IgnoreRules,
  options: ScanOptions,
): Promise<ScanResult> {
  const startedNs = BigInt(Date.now()) * 1_000_000n;
  const walked = await walkWorkspace(previous.workspace, rules, options);
  const entries = walked.entries;
  // A folder that could not be listed keeps what the index knew below it: not listed is not deleted.
  for (const dir of walked.unlisted)
    for (const [path, entry] of previous.entries) if (isBelow(path, dir)) entries.set(path, entry);

  const toRead: string[] = [];
  for (const [path, entry] of entries) {
    const before = previous.entries.get(path);
    if (before && !before.racy && sameStat(before, entry)) {
      entries.set(path, before);
      continue;
    }
    if (entry.kind === "file" || entry.kind === "symlink") toRead.push(path);
  }

  const written: string[] = [];
  const reading = forEachLimited(toRead, options.concurrency, async (path) => {
    const entry = entries.get(path)!;
    const absolute = `${previous.workspace}/${path}`;
    if (entry.kind === "symlink") {
      try {
        entry.target = await readlink(absolute);
      } catch {
        // Left without a target: recorded `skipped: unreadable` if a command changes it.
      }
    } else {
      const read = await readAndStore(locked, absolute, entry, previous.entries.get(path), options);
      if (read.written) written.push(read.written);
      if (read.entry === undefined) entries.delete(path);
      else entries.set(path, read.entry);
    }
    const now = entries.get(path);
    if (now && (now.mtimeNs >= startedNs - RACY_WINDOW_NS || now.ctimeNs >= startedNs - RACY_WINDOW_NS))
      now.racy = true;
  });
  try {
    await reading;
  } catch (error) {
    // Nothing will reference what this scan stored so far: leave no orphan.
    for (const hash of written) await locked.deleteBlob(hash).catch(() => undefined);
    throw error;
  }

  const set: string[] = [];
  const changed: string[] = [];
  for (const [path, entry] of entries) {
    const before = previous.entries.get(path);
    if (before === entry) continue;
    set.push(path);
    if (!before || !sameContent(before, entry)) changed.push(path);
  }
  const removed = [...previous.entries.keys()].filter((path) => !entries.has(path));
  changed.push(...removed);
  return { index: { ...previous, entries }, set, removed, changed, written };
}

/**
 * Reads one file, hashes it and stores its bytes. The entry takes the descriptor's own stat, so
 * what is recorded as "unchanged since" matches the bytes hashed. Returns undefined when the file
 * vanished meanwhile.
 */
async function readAndStore(
  locked: LockedSession,
  absolute: string,
  walked: IndexEntry,
  before: IndexEntry | undefined,
  options: ScanOptions,
): Promise<{ entry?: IndexEntry; written?: string }> {
  let fh;
  try {
    fh = await open(absolute, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return {};
    return { entry: { ...walked, skipped: "unreadable" } };
  }
  let entry: IndexEntry;
  let bytes: Buffer;
  try {
    entry = entryOf(await fh.stat({ bigint: true }));
    if (entry.kind !== "file") return { entry: { ...walked, kind: "other" } };
    if (entry.size > options.maxFileBytes) return { entry: { ...entry, skipped: "too_large" } };
    bytes = await readWhole(fh, entry.size);
  } catch {
    return { entry: { ...walked, skipped: "unreadable" } };
  } finally {
    await fh.close();
  }
  entry.size = bytes.length;
  entry.hash = createHash("sha256").update(bytes).digest("hex");
  if (before?.hash === entry.hash) return { entry };
  // A failed blob write (a full disk, a lost lock) is the caller's error, not this file's.
  await markBlobsInFlight(locked);
  // Not fsynced: most index blobs are never needed. The few a checkpoint references are synced
  // before it is appended (CommandCapture.after); this is what makes a cold scan affordable.
  const wrote = await locked.writeBlob(entry.hash, bytes, { durable: false });
  return wrote ? { entry, written: entry.hash } : { entry };
}

async function readWhole(fh: FileHandle, size: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(size);
  let total = 0;
  while (total < size) {
    const { bytesRead } = await fh.read(buffer, total, size - total, total);
    if (bytesRead === 0) break;
    total += bytesRead;
  }
  return total === size ? buffer : buffer.subarray(0, total);
}

function isBelow(path: string, dir: string): boolean {
  return dir === "" || path.startsWith(`${dir}/`);
}
