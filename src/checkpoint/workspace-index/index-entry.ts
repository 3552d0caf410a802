import type { FileSnapshot, FileState } from "../../core/events.js";
import type { Scope } from "./ignore-rules.js";

/**
 * What the index knows of one tracked path: what a stat gives (to tell cheaply whether it may
 * have changed) and what it held (the sha256 of a file's bytes, kept in the blob store; a link's
 * target), so the path's before-state is at hand whatever a command does to it.
 */
export interface IndexEntry {
  kind: "file" | "directory" | "symlink" | "other";
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  /** Permission bits (`mode & 0o7777`). */
  mode: number;
  /** Owner and group; absent in an index recorded before they were. */
  uid?: number;
  gid?: number;
  /** A file's sha256; its bytes are a blob of the session. Absent when `skipped`. */
  hash?: string;
  /** A file whose bytes are not kept: why. */
  skipped?: "too_large" | "unreadable";
  /** A symlink's target, as read. */
  target?: string;
  /**
   * Changed too close to the scan that read it to trust an unchanged stat later (git's "racy"
   * rule): a second write within the same timestamp tick leaves size and times as they were.
   * The next scan re-reads it.
   */
  racy?: boolean;
}

/**
 * What a folder held when it was last listed, with the folder's own stat then: while the stat is
 * the same (and was not racy), the folder holds the same names (docs/ARCHITECTURE.md, "Workspace
 * index": git's untracked-cache idea). Kept in memory only.
 */
export interface FolderListing {
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  /** Every name `readdir` gave, ignored ones included (the rules are applied on each walk). */
  names: string[];
  /** The workspace-relative path of each name, made by the first walk that trusted this listing (walk.ts). */
  paths?: string[];
  /** When the listing was taken (wall clock, ns). */
  listedAtNs: bigint;
}

/** The index of one session's workspace. `generation` counts the writes of its record. */
export interface WorkspaceIndex {
  /** Real absolute path of the workspace the paths are relative to. */
  workspace: string;
  generation: number;
  entries: Map<string, IndexEntry>;
  /** What each folder held when last listed (walk.ts): in memory only, so a loaded index lists every folder. */
  folders?: Map<string, FolderListing>;
  /** The ignore rules in force inside each folder (walk.ts): in memory only, like `folders`. */
  scopes?: Map<string, Scope>;
  /** Files with more than one link (walk.ts, `Walked.linked`): in memory only, like `folders`. */
  linked?: Set<string>;
  /** Bytes of the tracked files (each up to `maxFileBytes`), as the last walk counted them: in memory only. */
  bytes?: number;
  /** The ignored entries the last walk met (walk.ts, `Walked.ignored`): in memory only, like `folders`. */
  ignored?: Map<string, IndexEntry>;
  /**
   * What its records take (index-record.ts): the generation of the base on record, the base's stored bytes and
   * those of the deltas since, each rounded up to a disk block. In memory only, like `folders`: known once this
   * process loaded or wrote a base.
   */
  recorded?: { baseGeneration: number; baseBytes: number; deltaBytes: number };
}

/** True when the stat says nothing changed (content is then trusted, unless the entry is racy). */
export function sameStat(a: IndexEntry, b: IndexEntry): boolean {
  return (
    a.kind === b.kind &&
    a.size === b.size &&
    a.mtimeNs === b.mtimeNs &&
    a.ctimeNs === b.ctimeNs &&
    a.ino === b.ino &&
    a.mode === b.mode
  );
}

/** True when the path holds the same thing: same kind, bytes (by hash), mode, owner, link target. */
export function sameContent(a: IndexEntry, b: IndexEntry): boolean {
  if (a.kind !== b.kind || a.mode !== b.mode || !sameOwner(a, b)) return false;
  if (a.kind === "file")
    return a.hash === b.hash && a.skipped === b.skipped && (a.hash !== undefined || sameStat(a, b));
  if (a.kind === "symlink") return a.target === b.target;
  if (a.kind === "other") return sameStat(a, b);
  return true;
}

/**
 * True when the index's record would hold the same row for both: stat, content, owner and flags alike. A racy
 * entry read again and found so needs no row in the next delta (docs/ARCHITECTURE.md, "Workspace index").
 */
export function sameRecorded(a: IndexEntry, b: IndexEntry): boolean {
  return (
    sameStat(a, b) &&
    a.hash === b.hash &&
    a.target === b.target &&
    a.skipped === b.skipped &&
    (a.racy === true) === (b.racy === true) &&
    a.uid === b.uid &&
    a.gid === b.gid
  );
}

/** An owner known on both sides must be the same (`chown` is a change); one not recorded yet is not compared. */
function sameOwner(a: IndexEntry, b: IndexEntry): boolean {
  return a.uid === undefined || b.uid === undefined || (a.uid === b.uid && a.gid === b.gid);
}

/** The before-snapshot a checkpoint records for a path the index held as `entry`. */
export function snapshotOf(path: string, entry: IndexEntry): FileSnapshot {
  const owner = entry.uid === undefined ? {} : { uid: entry.uid, gid: entry.gid! };
  switch (entry.kind) {
    case "directory":
      return { path, kind: "directory", mode: entry.mode, ...owner };
    case "symlink":
      return entry.target === undefined
        ? { path, kind: "skipped", reason: "unreadable", detail: "the link could not be read" }
        : { path, kind: "symlink", target: entry.target, ...owner };
    case "other":
      return { path, kind: "skipped", reason: "not_a_regular_file" };
    case "file":
      if (entry.hash !== undefined)
        return { path, kind: "blob", blob: entry.hash, bytes: entry.size, mode: entry.mode, ...owner };
      return entry.skipped === "too_large"
        ? { path, kind: "skipped", reason: "too_large", detail: `${entry.size} bytes > maxFileBytes` }
        : { path, kind: "skipped", reason: "unreadable" };
  }
}

/**
 * The after-state a command left a path in, as the scan that saw it read it (docs/ARCHITECTURE.md,
 * "Conflicts"): the hash is the one the scan already took, so recording it costs nothing more.
 * `entry` undefined: the path is gone.
 */
export function stateOf(path: string, entry: IndexEntry | undefined): FileState {
  if (entry === undefined) return { path, kind: "absent" };
  switch (entry.kind) {
    case "directory":
      // The index leaves out ignored entries, so this is no list of everything below the folder.
      return { path, kind: "directory", mode: entry.mode, complete: false };
    case "symlink":
      return entry.target === undefined
        ? { path, kind: "unknown", reason: "unreadable" }
        : { path, kind: "symlink", target: entry.target };
    case "other":
      return { path, kind: "unknown", reason: "not_a_regular_file" };
    case "file":
      return entry.hash === undefined
        ? { path, kind: "unknown", reason: entry.skipped ?? "unreadable" }
        : { path, kind: "file", sha256: entry.hash, mode: entry.mode };
  }
}
