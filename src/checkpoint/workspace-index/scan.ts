import { revertWalk } from "./revert-walk.js";
import { readlink } from "../../core/named-fs.js";
import { type FileRead, readWorkspaceFile } from "./read-files.js";
import type { LockedSession } from "../../backend/types.js";
import { forEachLimited } from "../../core/bounded-concurrency.js";
import { ScanBlobs } from "./scan-blobs.js";
import {
  entryOf,
  RACY_WINDOW_NS,
  walkChangedFolders,
  walkWholeInPlace,
  walkWorkspace,
  type WalkHooks,
  type WalkLimits,
  type Walked,
} from "./walk.js";
import { sameContent, sameRecorded, type IndexEntry, type WorkspaceIndex } from "./index-entry.js";
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
  /** What a path held before the scan (its previous entry), undefined when it is new. */
  before(path: string): IndexEntry | undefined;
  /**
   * Puts the index the scan started from back as it was: a scan of the changed folders changes it in
   * place. For the caller to call when what the scan found is not recorded after all.
   */
  revert(): void;
  /** "changed folders": only the folders a watcher named were listed; "whole": the whole tree was walked. */
  walked: "whole" | "changed folders";
  /** Folders listed and paths lstat'ed by the walk. */
  listed: number;
  statted: number;
  /** Of those lstats, how many were taken ahead on helper threads (stat-ahead.ts). */
  statsAhead: number;
}

/** A watcher's help: which folders changed (undefined: walk everything) and the hooks that watch new ones. */
export interface Watching {
  changed: ReadonlySet<string> | undefined;
  hooks: WalkHooks;
}

const YIELD_EVERY = 500;

/**
 * Brings the index up to date with the workspace: a stat walk, then every entry that is new,
 * whose stat changed, or that was racy is read and hashed through a descriptor opened without
 * following links, and its bytes stored as a blob. Unchanged entries cost one lstat, and work
 * after the walk follows the entries that differ, not the workspace. Must run under the session
 * lock: the blobs written are referenced only once the caller saves the index.
 */
export async function scanWorkspace(
  locked: LockedSession,
  previous: WorkspaceIndex,
  rules: IgnoreRules,
  options: ScanOptions,
  watching?: Watching,
): Promise<ScanResult> {
  const startedNs = BigInt(Date.now()) * 1_000_000n;
  const walked = await walkOf(previous, rules, options, watching);
  const { entries, prior } = walked;
  // What each path held before the scan (an in-place walk changed `previous.entries` itself).
  const before = (path: string): IndexEntry | undefined =>
    prior === undefined ? previous.entries.get(path) : prior.has(path) ? prior.get(path) : entries.get(path);
  const revert = () => {
    if (prior !== undefined) revertWalk(entries, prior);
  };
  // A folder that could not be listed keeps what the index knew below it: not listed is not deleted.
  if (prior === undefined)
    for (const dir of walked.unlisted)
      for (const [path, entry] of previous.entries) if (isBelow(path, dir)) entries.set(path, entry);

  const written: string[] = [];
  let vanished: string[];
  try {
    vanished = await readDiffering(locked, previous.workspace, walked, before, options, startedNs, written);
  } catch (error) {
    // Nothing will reference what this scan stored so far: leave no orphan.
    for (const hash of written) await locked.deleteBlob(hash).catch(() => undefined);
    revert();
    throw error;
  }
  return {
    index: {
      ...previous,
      entries,
      folders: walked.folders,
      scopes: walked.scopes,
      linked: walked.linked,
      bytes: walked.bytes,
      ignored: walked.ignored,
    },
    before,
    revert,
    ...changesFound(previous, walked, before, vanished),
    written,
    walked: walked.changedOnly ? "changed folders" : "whole",
    listed: walked.listed,
    statted: walked.statted,
    statsAhead: walked.statsAhead,
  };
}

/**
 * Reads what the walk found differing: a link's target, a file's bytes (hashed and stored, the blob's hash
 * pushed onto `written`), each entry marked racy when it changed too close to the scan's start to trust its stat.
 * Returns the paths that vanished while being read (their entries deleted).
 */
async function readDiffering(
  locked: LockedSession,
  workspace: string,
  walked: Walked,
  before: (path: string) => IndexEntry | undefined,
  options: ScanOptions,
  startedNs: bigint,
  written: string[],
): Promise<string[]> {
  const { entries } = walked;
  const toRead = walked.differing.filter((path) => {
    const kind = entries.get(path)?.kind;
    return kind === "file" || kind === "symlink";
  });
  const vanished: string[] = [];
  const blobs = new ScanBlobs(locked, written);
  const absolute = (path: string) => `${workspace}/${path}`;
  const found = async (path: string, read: FileRead) => {
    const entry = await settled(blobs, read, entries.get(path)!, before(path));
    if (entry === undefined) {
      entries.delete(path);
      vanished.push(path);
    } else entries.set(path, entry);
    markRacy(path);
  };
  const markRacy = (path: string) => {
    const now = entries.get(path);
    if (now && (now.mtimeNs >= startedNs - RACY_WINDOW_NS || now.ctimeNs >= startedNs - RACY_WINDOW_NS))
      now.racy = true;
  };
  let sinceYield = 0;
  await forEachLimited(toRead, options.concurrency, async (path) => {
    const entry = entries.get(path)!;
    if (entry.kind === "symlink") {
      try {
        entry.target = await readlink(absolute(path));
      } catch {
        // Left without a target: recorded `skipped: unreadable` if a command changes it.
      }
      markRacy(path);
      return;
    }
    await found(path, await readWorkspaceFile(absolute(path), options.maxFileBytes));
    // Reads of small files are synchronous: when nothing is written, no await yields to the event loop.
    if (++sinceYield >= YIELD_EVERY) {
      sinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  });
  await blobs.flush();
  return vanished;
}

/**
 * The entry of a file as read: undefined when it vanished meanwhile, else its stat through the descriptor that
 * read it and the hash of its bytes, which are queued to be stored unless the entry had that hash already.
 */
async function settled(
  blobs: ScanBlobs,
  read: FileRead,
  walked: IndexEntry,
  before: IndexEntry | undefined,
): Promise<IndexEntry | undefined> {
  if ("gone" in read) return undefined;
  if ("unreadable" in read) return { ...walked, skipped: "unreadable" };
  const entry = entryOf(read.stat);
  if (entry.kind !== "file") return { ...walked, kind: "other" };
  if (read.bytes === undefined || read.hash === undefined) return { ...entry, skipped: "too_large" };
  entry.size = read.bytes.length;
  entry.hash = read.hash;
  if (before?.hash === entry.hash) return entry;
  // A failed blob write (a full disk, a lost lock) is the caller's error, not this file's.
  // Not fsynced: most index blobs are never needed. The few a checkpoint references are synced
  // before it is appended (CommandCapture.after); this is what makes a cold scan affordable.
  await blobs.add(entry.hash, read.bytes);
  return entry;
}

/** Which paths the scan set, removed and changed, against what each held before it. */
function changesFound(
  previous: WorkspaceIndex,
  walked: Walked,
  before: (path: string) => IndexEntry | undefined,
  vanished: readonly string[],
): Pick<ScanResult, "set" | "removed" | "changed"> {
  const { entries, prior } = walked;
  const set: string[] = [];
  const changed: string[] = [];
  for (const path of walked.differing) {
    const entry = entries.get(path);
    if (entry === undefined) continue; // vanished while being read: removed below, if it was there
    const was = before(path);
    if (was !== undefined && sameRecorded(was, entry)) continue; // a racy entry read again, found the same
    set.push(path);
    if (!was || !sameContent(was, entry)) changed.push(path);
  }
  // Every previous path found again by the walk: only those that vanished while being read are gone.
  const removed =
    prior !== undefined
      ? [...prior].flatMap(([path, was]) => (was !== undefined && !entries.has(path) ? [path] : []))
      : walked.foundAgain === previous.entries.size
        ? vanished.filter((path) => previous.entries.has(path))
        : [...previous.entries.keys()].filter((path) => !entries.has(path));
  changed.push(...removed);
  return { set, removed, changed };
}

/** The changed folders only, when a watcher named them and the index knows their listings; else everything. */
async function walkOf(
  previous: WorkspaceIndex,
  rules: IgnoreRules,
  options: ScanOptions,
  watching: Watching | undefined,
): Promise<Walked & { changedOnly: boolean }> {
  const { folders, scopes, linked } = previous;
  if (watching?.changed !== undefined && folders !== undefined && scopes !== undefined && linked !== undefined) {
    const known = {
      entries: previous.entries,
      folders,
      scopes,
      linked,
      ...(previous.ignored === undefined ? {} : { ignored: previous.ignored }),
      ...(previous.bytes === undefined ? {} : { bytes: previous.bytes }),
    };
    const walked = await walkChangedFolders(
      previous.workspace,
      rules,
      options,
      known,
      watching.changed,
      watching.hooks,
    );
    if (walked !== undefined) return { ...walked, changedOnly: true };
  }
  // A first scan fills a map of its own; a later one changes the index's in place (Walked.prior).
  const walked =
    previous.entries.size === 0
      ? await walkWorkspace(previous.workspace, rules, options, previous, watching?.hooks)
      : await walkWholeInPlace(previous.workspace, rules, options, previous, watching?.hooks);
  return { ...walked, changedOnly: false };
}

function isBelow(path: string, dir: string): boolean {
  return dir === "" || path.startsWith(`${dir}/`);
}
