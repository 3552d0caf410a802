import type { ArchivedLog } from "../backend/types.js";
import type { FileSnapshot, StoredEvent } from "../core/events.js";
import type { OnConflict } from "./conflicts.js";
import type { UndoBlobInIntent } from "./undo-in-intent.js";

/**
 * Everything needed to finish a rewind or an undo from any point, written (fsynced) before the
 * first file is touched. Every step it drives is idempotent, so a crash anywhere — even during
 * recovery — ends in the same state: the operation fully done (files, log and marker).
 */
export interface RewindIntent {
  kind: "rewind" | "undo";
  /** The marker's sequence. The log holding it means the operation is complete. */
  markerSequence: number;
  /** Real path of the workspace the file records apply to (absent for a conversation-only rewind). */
  workspace?: string;
  /** What each changed path must become. */
  files: FileSnapshot[];
  /** Cut the log back to this sequence before appending. */
  truncateTo: number;
  /** Events to append, the marker last, their sequences already set. */
  append: StoredEvent[];
  /** Archives to delete (expired, or put back by an undo). */
  dropArchives: string[];
  /**
   * The events a rewind cuts, kept for its undo (docs/ARCHITECTURE.md, "Rewind intent"). `copyAfter`: the
   * log's bytes after that sequence are copied beside the records as they are (fsynced, before the log is
   * cut: step "log-archived"), the marker names their length and sha256, and the archive record (written
   * without fsync once the marker is in the log: a power loss can cost the undo, never consistency) says
   * the same; `blobs`, what the cut events reference, stays unpruned. `events`: intents written before
   * byte-range archives (and by backends that cannot copy a range) carry the events themselves instead.
   */
  archive?: { name: string; copyAfter?: number; blobs?: string[]; events?: StoredEvent[] };
  /**
   * An undo of a byte-range archive: its events, renumbered from `first`, are appended as one batch with
   * `append` (the undo marker) at its end, streamed from the archive and checked against `log` on the way.
   * Absent (older intents, older archives): `append` holds them.
   */
  reappend?: { archive: string; log: ArchivedLog; first: number };
  /**
   * The undo snapshot's bytes when they are few and small (undo-in-intent.ts): fsynced with the intent
   * instead of stored as blobs before it, and stored as blobs during step 1, durable before the log is cut.
   * Absent: the undo blobs were stored (durably) before the intent was written.
   */
  undoBlobs?: UndoBlobInIntent[];
  /** Prune unreferenced blobs (a rewind does; an undo removes nothing, so need not). */
  prune: boolean;
  /**
   * Blobs stored only so a failed rewind can put the files back (keepUndo 0 keeps no undo): the
   * prune removes them again, and they are not counted as pruned.
   */
  scratchBlobs?: number;
  /**
   * The only blobs this rewind can leave unreferenced: those of the events it cuts and of the archives
   * it drops. Prune looks at just these — none at all, and no read of the log, when the list is empty
   * (a conversation-only cut). Absent in intents written before it: prune then looks at every blob.
   */
  pruneCandidates?: string[];
  /**
   * What each path the operation changes (and what lies below it) is before it: the undo snapshot, its blobs
   * stored before the intent. Lets the operation be rolled back while the log is untouched
   * (src/rewind/roll-back.ts). Absent in intents written before it: those can only be finished.
   */
  before?: FileSnapshot[];
  /**
   * Set, durably, once the caller was told the operation failed and could not be rolled back (REWIND_FAILED,
   * `rolledBack: false`), only while the log is untouched: no writer finishes it behind the caller's back; the
   * next one rolls it back once the cause is fixed. Readers report the reason (`SessionInfo.pendingRewind`).
   */
  failed?: { reason: string };
  /**
   * What to do about a path found changed just before it is written, after the conflict check (late-change.ts):
   * the caller's `onConflict` ("refuse" when it may overwrite only confirmed conflicts). Absent in intents written
   * before it: "skip".
   */
  onLateChange?: OnConflict;
}
