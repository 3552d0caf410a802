// What `verify` (verify.ts) takes and reports.
import type { SignalOption } from "../backend/types.js";
import type { ErrorSummary } from "./failure.js";

export interface VerifyOptions extends SignalOption {
  /** Called as the work advances (every 1000 events read, every blob checked), e.g. to show progress. */
  onProgress?: (progress: VerifyProgress) => void;
}

export interface VerifyProgress {
  eventsRead: number;
  blobsChecked: number;
  /** 0 until the log and the archives are read and the blobs to check are known. */
  blobsToCheck: number;
}

/** The first event that names a blob. */
export interface BlobReference {
  sequence: number;
  /** The event's type, e.g. "session_checkpoint". */
  type: string;
  /** The workspace path of the snapshot that is the blob (a checkpoint, or a rewind's undo). */
  path?: string;
  /** The rewind archive holding the event, when a rewind cut it from the log and keeps it for undo. */
  archive?: string;
}

/** One thing wrong with a session. `message` says what and where, for a person. */
export type VerifyProblem =
  /** The session's creation record (session.json) cannot be read. */
  | { kind: "metadata_unreadable"; message: string; error: ErrorSummary }
  /** The log cannot be read at all (not one bad line: the file itself). */
  | { kind: "log_unreadable"; message: string; error: ErrorSummary }
  /** A line of the log is not an event, or its sequence does not follow the one before. 1-based `line`. */
  | { kind: "corrupt_line"; message: string; line: number; reason: string }
  /**
   * A built-in event whose payload does not fit its schema (a checkpoint whose `files` is not a list): what it
   * references cannot be known, so rewind, undo and gc refuse the session (STORE_TAMPERED).
   */
  | { kind: "payload_invalid"; message: string; sequence: number; type: string; reason: string; archive?: string }
  /**
   * An undo marker whose record of the events it put back (`reappendedRanges`, or `reappendedFrom` on older
   * markers) disagrees with the tape: it does not count the events between the rewind it undid and itself,
   * or names a sequence that rewind did not cut. Nothing acts on that record, so nothing refuses the session.
   */
  | { kind: "marker_inconsistent"; message: string; sequence: number; reason: string; archive?: string }
  /** A side record (a rewind archive, a rewind intent) cannot be read; no `record` when none can be listed. */
  | { kind: "record_unreadable"; message: string; record?: string; error: ErrorSummary }
  /** A side record reads, but is not what its name says (a rewind archive without its events). */
  | { kind: "record_malformed"; message: string; record: string }
  /**
   * A rewind or undo is not finished: its intent is there and fits the tape. Interrupted, the next writer
   * finishes it; failed and not rolled back (its caller was told), the next writer rolls it back.
   */
  | { kind: "intent_pending"; message: string; record: string }
  /** The rewind intent does not fit the tape (planted or edited): no writer will act on it (STORE_TAMPERED). */
  | { kind: "intent_tampered"; message: string; record: string }
  /**
   * session.json names a workspace other than the one the tape's snapshots were taken in (`recorded`), or the
   * snapshots name more than one: a rewind not told its workspace refuses (WORKSPACE_MISMATCH).
   */
  | { kind: "workspace_mismatch"; message: string; named?: string; recorded: string[] }
  /** An event names a blob the session does not hold. */
  | { kind: "blob_missing"; message: string; hash: string; referencedBy: BlobReference }
  /**
   * A blob's bytes no longer hash to its name, or it is longer or shorter than its snapshot recorded (then
   * `actualHash` is of the bytes read: at most the recorded length and one byte more).
   */
  | { kind: "blob_corrupt"; message: string; hash: string; actualHash: string; referencedBy: BlobReference }
  /** A blob cannot be read (e.g. EACCES). */
  | { kind: "blob_unreadable"; message: string; hash: string; referencedBy: BlobReference; error: ErrorSummary };

export type VerifyProblemKind = VerifyProblem["kind"];

export interface VerifyReport {
  sessionId: string;
  /** True when `problems` is empty. */
  ok: boolean;
  /** Events of the log that parsed. */
  events: number;
  /** Distinct blobs referenced by the log and the rewind archives, each re-hashed. */
  blobsChecked: number;
  /** In the order found: the log's lines, then the records, then the blobs in the order the tape names them. */
  problems: VerifyProblem[];
  /**
   * What this check could not hold to anything, one sentence each: {@link VERIFY_NEVER_CHECKS} always, then what
   * this session leaves unchecked (a workspace no snapshot records, a pending intent's before-state, blobs
   * retention dropped). docs/ARCHITECTURE.md, "Confinement".
   */
  notChecked: string[];
}

/** What `verify` can never see, whatever the session (docs/ARCHITECTURE.md, "Confinement"). */
export const VERIFY_NEVER_CHECKS: readonly string[] = [
  "who wrote the tape: events are not signed, so a log and session.json edited by hand to agree with each " +
    "other read as sound",
  "the workspace's files: verify reads the session folder only",
  "store parts it does not read (on disk: blobs/.incoming, events.cuts, the lock folders): a link or FIFO " +
    "there is refused (STORE_TAMPERED) when a writer or reader comes to use it",
  "a link swapped into the session folder after verify looked: its folder checks are check-then-use",
];
