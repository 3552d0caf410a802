// What a walk of the workspace starts from and what it gives back (walk.ts).
import type { FolderListing, IndexEntry } from "./index-entry.js";
import type { Scope } from "./ignore-rules.js";

export interface WalkLimits {
  /** Tracked entries (files, folders, links) past which the scan is refused. */
  maxFiles: number;
  /** Bytes of tracked files (those kept, up to `maxFileBytes` each) past which the scan is refused. */
  maxBytes: number;
  /** A file larger than this is tracked by its stat only and recorded `skipped: too_large`. */
  maxFileBytes: number;
}

/** What the walk starts from: the entries, folder listings and ignore scopes of the previous scan. */
export interface Known {
  entries: ReadonlyMap<string, IndexEntry>;
  folders?: ReadonlyMap<string, FolderListing>;
  scopes?: ReadonlyMap<string, Scope>;
  /** Files with more than one link (see {@link Walked.linked}). */
  linked?: ReadonlySet<string>;
  /** Bytes of the tracked files (each up to `maxFileBytes`), when known. */
  bytes?: number;
  /** Ignored entries met (see {@link Walked.ignored}). */
  ignored?: ReadonlyMap<string, IndexEntry>;
}

/** Told of every folder the walk is about to list, so it can be watched first (folder-watcher.ts). */
export interface WalkHooks {
  /**
   * `path` (workspace-relative, "" for the workspace) with its inode. Returns true when the folder
   * was not watched before: its names are then listed afresh, after the watch, never taken from
   * a listing held over (a name added before the watch would be seen by neither).
   */
  beforeListing(path: string, ino: bigint): boolean;
}

export interface Walked {
  /**
   * Every tracked path with its stat. An entry whose stat is unchanged (and was not racy) is the
   * previous entry itself (`===`); any other is new, with `hash` / `target` still to be filled in.
   */
  entries: Map<string, IndexEntry>;
  /** Paths whose entry is not the previous one: new, stat changed, or racy. */
  differing: string[];
  /** How many paths of the previous entries were found again (all of them: nothing was removed). */
  foundAgain: number;
  /** Folders that could not be listed: what the index held below them is kept as it was. */
  unlisted: string[];
  /** The listings to trust on the next walk (folders listed now, or whose listing still held). */
  folders: Map<string, FolderListing>;
  /** The ignore rules in force inside each folder (its own `.gitignore` included). */
  scopes: Map<string, Scope>;
  /**
   * Tracked files with more than one link: a write through another name raises no event on this
   * name's folder, so a watched scan lstats them all again (docs/ARCHITECTURE.md, "Watched scans").
   */
  linked: Set<string>;
  /** Folders listed (`readdir`) and paths `lstat`ed: what the walk cost. */
  listed: number;
  statted: number;
  /** Of those lstats, how many were taken ahead on helper threads (stat-ahead.ts). */
  statsAhead: number;
  /** Bytes of the tracked files (each up to `maxFileBytes`). */
  bytes: number;
  /**
   * The ignored entries the walk met in the folders it listed (not entered, not read: their stat only, which the
   * walk takes anyway), the library's own folders left out. A command's changes to them cannot be rewound, only
   * named (docs/ARCHITECTURE.md, "Workspace index"). A walk of changed folders starts from the known ones.
   */
  ignored: Map<string, IndexEntry>;
  /**
   * From a walk that changes the entries of `known` in place (`walkChangedFolders`, `walkWholeInPlace`: copying
   * 50k entries per scan cost more than the scan): what each path it changed held before, undefined for a path it
   * added.
   */
  prior?: Map<string, IndexEntry | undefined>;
}

/** What `walkChangedFolders` starts from, and changes in place. */
export interface InPlace {
  entries: Map<string, IndexEntry>;
  folders: Map<string, FolderListing>;
  scopes: Map<string, Scope>;
  linked: Set<string>;
  bytes?: number;
  ignored?: ReadonlyMap<string, IndexEntry>;
}
