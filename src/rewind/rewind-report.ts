// What `rewind` (rewind.ts) takes and reports; `undoRewind` reports the same, and more.
import type { SignalOption } from "../backend/types.js";
import type { FileChange, IgnoredChanges, RewindMode } from "../core/events.js";
import type { DiffTotals } from "../core/file-diff.js";
import type { RewindConflict } from "../core/errors.js";
import type { RewindStep } from "./intent.js";
import type { ConfirmedConflict, OnConflict } from "./conflicts.js";

export interface RewindOptions extends SignalOption {
  /** The event to go back to: everything after it is undone. Give this or `beforeCallId`. */
  toSequence?: number;
  /**
   * Go back to just before this tool call (the event before its `tool_call`, the latest one with this
   * `callId`; or before the first checkpoint with it when the agent logs no tool_call): what an agent's UI
   * knows. Found going back from the end, so it costs what lies after the call. Give this or `toSequence`.
   */
  beforeCallId?: string;
  /** @default the workspace recorded when the session was created */
  workspace?: string;
  /** `"all"` files and conversation; `"files"` only the workspace; `"conversation"` only the log. @default "all" */
  mode?: RewindMode;
  /** Return the plan (per path: restore / delete / skip) and touch nothing. @default false */
  dryRun?: boolean;
  /**
   * How many of the latest rewinds stay undoable. Each keeps the events it removed (an archive
   * beside the log) and the before-bytes of the files it changed. 0 makes a rewind cheaper and
   * final. @default 1
   */
  keepUndo?: number;
  /** Files bigger than this are not saved for undo (the undo then skips them). @default 5 MiB */
  maxFileBytes?: number;
  /**
   * Go ahead even where the rewind overwrites or deletes content it keeps no copy of (a file over
   * `maxFileBytes`, an unreadable one, a folder past the snapshot budget): `report.unrecoverable`
   * lists them. Without it such a rewind throws UNRECOVERABLE_CHANGE and changes nothing.
   * `keepUndo: 0` already asks for a rewind nothing is kept for. @default false
   */
  allowUnrecoverable?: boolean;
  /**
   * A path this rewind would change that was changed outside the session since the tape last recorded
   * leaving it (an after-state from `around`/`after`, or an earlier rewind) is a conflict:
   * `"refuse"` throws REWIND_CONFLICT listing them and changes nothing; `"skip"` leaves those paths as
   * they are and rewinds the rest; `"overwrite"` rewinds them too (their current bytes go into the
   * undo snapshot, so `undoRewind` brings them back unless `keepUndo` is 0). A dry run reports them.
   * A path found changed while the rewind runs, just before its write, is handled the same way ("refuse" then
   * rolls the rewind back); with `overwriteOnly` it is refused.
   * @default "refuse"
   */
  onConflict?: OnConflict;
  /**
   * With `onConflict: "overwrite"`: overwrite only these conflicts (as a dry run reported them: same path,
   * same current state). Any other, such as a file edited after a person was asked, is refused with
   * REWIND_CONFLICT and nothing changes. For a confirm step between a dry run and the rewind.
   * @default every conflict is overwritten
   */
  overwriteOnly?: readonly ConfirmedConflict[];
  /**
   * Called after each step: "planned", "intent-written", then the four steps. It runs while the session is
   * locked: do not call the store from it.
   */
  onProgress?: (step: "planned" | "intent-written" | RewindStep) => void;
  /**
   * Put each changed text file's unified diff in the report (`changes[i].patch`), within the diff
   * bounds (DIFF_LIMITS). Insertion and deletion counts are always there. @default false
   */
  diffs?: boolean;
  /**
   * The session's last sequence the caller decided at (a dry run's `lastSequence`, the head a person was
   * shown): when the tape has moved since, SEQUENCE_CONFLICT and nothing changes.
   * @default no check: the rewind acts on the tape as it is when it takes the lock
   */
  expectedLastSequence?: number;
}

/** A path in a report: the change, and its unified diff when `diffs` asked for it (never stored). */
export interface ReportedChange extends FileChange {
  patch?: string;
}

export interface RewindReport {
  targetSequence: number;
  /** The session's last sequence the rewind was planned at: pass it back as `expectedLastSequence`. */
  lastSequence: number;
  dryRun: boolean;
  mode: RewindMode;
  filesRestored: number;
  filesDeleted: number;
  /** Paths left alone, each with its reason in `changes`. */
  skipped: string[];
  changes: ReportedChange[];
  /** Lines (text) and bytes (binary or past the diff bounds) the file changes insert and delete. */
  diffTotals: DiffTotals;
  /**
   * Paths whose current content the rewind overwrites or deletes with no copy kept for undo (each
   * change says why, in `unrecoverable`). Present only when there are some. Without
   * `allowUnrecoverable` (or `keepUndo: 0`) a rewind that has any is refused: UNRECOVERABLE_CHANGE.
   */
  unrecoverable?: string[];
  /** Events cut from the log (or that would be, in a dry run). */
  eventsRemoved: number;
  blobsPruned: number;
  /** Sequence of the `session_rewind` event; undefined for a dry run or a no-op. */
  markerSequence?: number;
  /** Paths changed outside the session since the tape last wrote them, and what was done about each; set when any. */
  conflicts?: RewindConflict[];
  /**
   * Ignored content (`.gitignore`, `.git`, `workspaceIndex.ignore`) that the shell commands being rewound removed
   * or changed: never stored, so this rewind cannot put it back (`rm -rf build`, `mv node_modules x`). A bounded
   * list and a count of all; set when any.
   */
  ignoredChanges?: IgnoredChanges;
  /**
   * Files this rewind restores that share their inode with other names (hard links): each comes back as a file of
   * its own, and the other names keep what they hold. Set when any; checked when planned.
   */
  hardLinksSplit?: string[];
}
