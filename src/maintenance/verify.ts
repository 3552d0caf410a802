// Maintenance, verify: reads a whole session and says what is damaged, changing nothing.
import type { SignalOption } from "../backend/types.js";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { isAgentTapeError, SessionNotFoundError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";
import { builtinPayloadProblem } from "../core/payload-check.js";
import { archivedEvents, isArchiveName, isArchiveShape } from "../blobs/archives.js";
import { referencedBlobs, snapshotsIn } from "../blobs/references.js";
import { checkBlob } from "../blobs/store-then-reference.js";
import { HORIZON_RECORD, type HorizonMark, isDroppedCheckpoint, readHorizonMark } from "../blobs/retention-horizon.js";
import type { SessionStore } from "../session/session-store.js";
import { summarizeError, type ErrorSummary } from "./failure.js";
import { REWIND_INTENT_RECORD } from "../rewind/intent.js";
import { checkIntent, intentShapeProblem } from "../rewind/intent-check.js";
import { isTheRecordedWorkspace, workspaceRecordedBy } from "../checkpoint/recorded-workspace.js";
import { UndoMarkersInLog, undoMarkerProblem } from "./undo-marker.js";
import { signalOf } from "../core/defined-fields.js";

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

/**
 * Checks a whole session: every line of the log parses and sequences strictly increase, every
 * built-in event's payload fits its schema (and an undo marker's former sequences fit the tape), every
 * side record reads, and every blob an event (or a rewind archive, kept for undo) names exists and still
 * matches its sha256. Reads past damage to list every problem. Takes no lock and changes nothing. Costs
 * one streamed read of the log and a read and hash of every referenced blob (8 at a time). Throws
 * SESSION_NOT_FOUND, INVALID_SESSION_ID, or the signal's reason when aborted; every other failure is
 * reported as a problem.
 */
export async function verify(
  store: SessionStore<any>,
  sessionId: string,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  const backend = store.backend;
  const { signal } = options;
  const problems: VerifyProblem[] = [];
  const notChecked: string[] = [...VERIFY_NEVER_CHECKS];
  const progress: VerifyProgress = { eventsRead: 0, blobsChecked: 0, blobsToCheck: 0 };

  let meta: Awaited<ReturnType<typeof backend.getSession>>;
  try {
    meta = await backend.getSession(sessionId, signalOf(signal));
    if (meta === undefined) throw new SessionNotFoundError(sessionId);
  } catch (error) {
    if (signal?.aborted) throw error;
    if (isAgentTapeError(error, "INVALID_SESSION_ID") || isAgentTapeError(error, "SESSION_NOT_FOUND")) throw error;
    const summary = summarizeError(error);
    problems.push({
      kind: "metadata_unreadable",
      message: `session.json cannot be read: ${summary.message}`,
      error: summary,
    });
  }

  // Checkpoints retention dropped have no blobs left to check (docs/ARCHITECTURE.md, "Retention").
  let horizon: HorizonMark = { through: 0 };
  try {
    horizon = await readHorizonMark(backend, sessionId, signalOf(signal));
  } catch (error) {
    if (signal?.aborted) throw error;
    problems.push({ kind: "record_malformed", record: HORIZON_RECORD, message: summarizeError(error).message });
  }
  if (horizon.through > 0)
    notChecked.push(`the blobs of checkpoints retention dropped (up to #${horizon.through}): removed on purpose`);
  const firstReference = new Map<string, BlobReference>();
  /** The length the first snapshot naming a blob recorded: the blob is hashed up to it and one byte more. */
  const recordedBytes = new Map<string, number>();
  const recordedWorkspaces = new Set<string>();
  const inconsistentMarker = (sequence: number, reason: string, archive?: string) => {
    const where = archive === undefined ? "" : ` in ${archive}`;
    problems.push({
      kind: "marker_inconsistent",
      sequence,
      reason,
      ...(archive === undefined ? {} : { archive }),
      message: `undo marker #${sequence}${where} does not agree with the tape: ${reason}`,
    });
  };
  /** Checks one event's payload and notes the blobs it names; false when its payload is unsound. */
  const note = (event: StoredEvent, archive?: string): boolean => {
    let sound = true;
    const reason = builtinPayloadProblem(event);
    if (reason !== undefined) {
      const where = archive === undefined ? "" : ` in ${archive}`;
      problems.push({
        kind: "payload_invalid",
        sequence: event.sequence,
        type: event.type,
        reason,
        ...(archive === undefined ? {} : { archive }),
        message: `event #${event.sequence}${where} (${event.type}) does not fit its schema: ${reason}`,
      });
      return false;
    }
    const inconsistent = undoMarkerProblem(event);
    if (inconsistent !== undefined) {
      inconsistentMarker(event.sequence, inconsistent, archive);
      sound = false;
    }
    if (archive === undefined) {
      const workspace = workspaceRecordedBy(event);
      if (workspace !== undefined) recordedWorkspaces.add(workspace);
    }
    if (isDroppedCheckpoint(event, horizon)) return sound;
    const hashes = referencedBlobs([event]);
    const where = archive === undefined ? {} : { archive };
    for (const file of snapshotsIn(event)) {
      if (file.kind !== "blob" || !hashes.has(file.blob) || firstReference.has(file.blob)) continue;
      firstReference.set(file.blob, { sequence: event.sequence, type: event.type, path: file.path, ...where });
      recordedBytes.set(file.blob, file.bytes);
    }
    for (const hash of hashes)
      if (!firstReference.has(hash)) firstReference.set(hash, { sequence: event.sequence, type: event.type, ...where });
    return sound;
  };

  let lastSequence = 0;
  const undoMarkers = new UndoMarkersInLog();
  // Streamed rather than store.salvage(): the same skip-and-report of bad lines, in flat memory.
  try {
    const source = backend.readEvents(sessionId, {
      ...signalOf(signal),
      onCorrupt: (bad) =>
        problems.push({
          kind: "corrupt_line",
          line: bad.line,
          reason: bad.reason,
          message: `events.jsonl line ${bad.line}: ${bad.reason}`,
        }),
    });
    for await (const event of source) {
      progress.eventsRead++;
      lastSequence = event.sequence;
      undoMarkers.add(event, note(event));
      if (progress.eventsRead % 1000 === 0) options.onProgress?.({ ...progress });
    }
  } catch (error) {
    if (signal?.aborted) throw error;
    const summary = summarizeError(error);
    problems.push({
      kind: "log_unreadable",
      message: `events.jsonl cannot be read: ${summary.message} (${summary.code})`,
      error: summary,
    });
  }

  // Known once the log is read: whether a later undo put a marker back under a new number.
  for (const { sequence, reason } of undoMarkers.problems()) inconsistentMarker(sequence, reason);

  if (meta !== undefined) {
    const problem = await workspaceProblem(meta.workspace, recordedWorkspaces);
    if (problem) problems.push(problem);
    else if (recordedWorkspaces.size === 0 && meta.workspace !== undefined)
      notChecked.push(
        `session.json's workspace ("${meta.workspace}"): no snapshot on the tape records one to hold it to ` +
          "(a rewind of such a tape changes no file)",
      );
  }

  await checkRecords(store, sessionId, signal, problems, note, lastSequence, notChecked);

  const hashes = [...firstReference.keys()];
  progress.blobsToCheck = hashes.length;
  const blobProblems = new Map<string, VerifyProblem>();
  await forEachLimited(hashes, 8, async (hash) => {
    signal?.throwIfAborted();
    try {
      // Hashed as a stream (checkBlob): 8 blobs at once hold a chunk each, whatever the store holds or claims.
      await checkBlob(backend, sessionId, hash, { ...signalOf(signal), bytes: recordedBytes.get(hash) });
    } catch (error) {
      if (signal?.aborted) throw error;
      blobProblems.set(hash, blobProblem(hash, firstReference.get(hash)!, error));
    }
    progress.blobsChecked++;
    options.onProgress?.({ ...progress });
  });
  // Parallel checks finish in any order; report in the order the tape names the blobs.
  for (const hash of hashes) {
    const problem = blobProblems.get(hash);
    if (problem) problems.push(problem);
  }
  return {
    sessionId,
    ok: problems.length === 0,
    events: progress.eventsRead,
    blobsChecked: hashes.length,
    problems,
    notChecked,
  };
}

/** session.json's workspace against the ones the tape's snapshots were taken in, as a rewind holds it. */
async function workspaceProblem(
  named: string | undefined,
  recorded: ReadonlySet<string>,
): Promise<VerifyProblem | undefined> {
  if (recorded.size === 0) return undefined;
  if (named !== undefined && (await isTheRecordedWorkspace(named, recorded))) return undefined;
  const list = [...recorded].map((w) => `"${w}"`).join(" and ");
  const says = named === undefined ? "session.json names no workspace" : `session.json names "${named}"`;
  return {
    kind: "workspace_mismatch",
    ...(named === undefined ? {} : { named }),
    recorded: [...recorded],
    message:
      `${says}, but the tape's snapshots were taken in ${list}: a rewind not given its workspace refuses ` +
      "where they disagree (WORKSPACE_MISMATCH)",
  };
}

/** Every side record must read; a rewind archive must hold events, whose blobs must be sound too (undo needs them). */
async function checkRecords(
  store: SessionStore<any>,
  sessionId: string,
  signal: AbortSignal | undefined,
  problems: VerifyProblem[],
  note: (event: StoredEvent, archive: string) => boolean,
  lastSequence: number,
  notChecked: string[],
): Promise<void> {
  let names: string[];
  try {
    names = (await store.backend.listRecords(sessionId, signalOf(signal))).sort();
  } catch (error) {
    if (signal?.aborted) throw error;
    const summary = summarizeError(error);
    problems.push({
      kind: "record_unreadable",
      message: `side records cannot be listed: ${summary.message}`,
      error: summary,
    });
    return;
  }
  for (const name of names) {
    let value: unknown;
    try {
      value = await store.backend.readRecord(sessionId, name, signalOf(signal));
    } catch (error) {
      if (signal?.aborted) throw error;
      const summary = summarizeError(error);
      const what = isArchiveName(name) ? "rewind archive" : "side record";
      problems.push({
        kind: "record_unreadable",
        record: name,
        message: `${what} ${name} cannot be read: ${summary.message}`,
        error: summary,
      });
      continue;
    }
    if (name === REWIND_INTENT_RECORD && value !== undefined) {
      const problem = await intentProblem(store, sessionId, lastSequence, value);
      problems.push(problem);
      if (problem.kind === "intent_pending" && ((value as { before?: unknown[] }).before?.length ?? 0) > 0)
        notChecked.push(
          `what the workspace held before the pending ${(value as { kind: string }).kind} (the intent's before ` +
            "records, which the tape does not hold): only that they lie at or below paths it changes",
        );
      continue;
    }
    if (!isArchiveName(name) || value === undefined) continue;
    const log = (value as { log?: unknown } | null)?.log;
    if (log !== undefined) {
      // The cut part copied as bytes: streamed, checked against its length and sha256 as it goes.
      const problem = await archivedLogProblem(store, sessionId, name, value, note, signal);
      if (problem) problems.push(problem);
      continue;
    }
    const events = (value as { events?: unknown } | null)?.events;
    if (!Array.isArray(events) || !events.every(isEventLike)) {
      problems.push({
        kind: "record_malformed",
        record: name,
        message: `rewind archive ${name} is malformed: it does not hold the list of events the rewind cut`,
      });
      continue;
    }
    for (const event of events) note(event, name);
  }
}

/** A byte-range archive whose bytes, read through, are not what its record names: why, else undefined. */
async function archivedLogProblem(
  store: SessionStore<any>,
  sessionId: string,
  name: string,
  value: unknown,
  note: (event: StoredEvent, archive: string) => boolean,
  signal: AbortSignal | undefined,
): Promise<VerifyProblem | undefined> {
  const malformed = (why: string): VerifyProblem => ({
    kind: "record_malformed",
    record: name,
    message: `rewind archive ${name} is malformed: ${why}`,
  });
  if (!isArchiveShape(value)) return malformed("its record does not name the log bytes the rewind cut");
  try {
    for await (const event of archivedEvents(store.backend, sessionId, name, value, signalOf(signal)))
      note(event, name);
  } catch (error) {
    if (signal?.aborted || !isAgentTapeError(error, "STORE_TAMPERED")) throw error;
    return malformed(`its copy of the cut log is not what the rewind kept (${error.what})`);
  }
  return undefined;
}

/** A rewind intent on disk is always worth a word: malformed, not fitting the tape, or an interrupted rewind. */
async function intentProblem(
  store: SessionStore<any>,
  sessionId: string,
  lastSequence: number,
  value: unknown,
): Promise<VerifyProblem> {
  const record = REWIND_INTENT_RECORD;
  const malformed = intentShapeProblem(value);
  if (malformed !== undefined)
    return { kind: "record_malformed", record, message: `${record} ${malformed}; no writer will act on it` };
  try {
    await checkIntent(store.backend, sessionId, lastSequence, value);
  } catch (error) {
    if (!isAgentTapeError(error, "STORE_TAMPERED")) throw error;
    return { kind: "intent_tampered", record, message: `${error.message}` };
  }
  const { kind, failed } = value as { kind: string; failed?: { reason: string } };
  return {
    kind: "intent_pending",
    record,
    message: failed
      ? `a ${kind} that failed is pending (${record}: ${failed.reason}); the next writer to take the lock ` +
        "rolls it back once the cause is fixed"
      : `an interrupted ${kind} is pending (${record}); the next writer to take the lock finishes it`,
  };
}

function isEventLike(value: unknown): value is StoredEvent {
  const event = value as StoredEvent | null;
  return (
    typeof event === "object" &&
    event !== null &&
    typeof event.type === "string" &&
    Number.isSafeInteger(event.sequence)
  );
}

/** "a.txt, checkpoint #3 in rewind-archive-6", as the CLI has always said it. */
export function describeReference(reference: BlobReference): string {
  const where = reference.archive === undefined ? "" : ` in ${reference.archive}`;
  if (reference.path === undefined) return `event #${reference.sequence}${where}`;
  const kind = reference.type === "session_rewind" ? "rewind" : "checkpoint";
  return `${reference.path}, ${kind} #${reference.sequence}${where}`;
}

function blobProblem(hash: string, referencedBy: BlobReference, error: unknown): VerifyProblem {
  const at = `(${describeReference(referencedBy)})`;
  if (isAgentTapeError(error, "BLOB_NOT_FOUND"))
    return { kind: "blob_missing", hash, referencedBy, message: `blob ${hash} is missing ${at}` };
  if (isAgentTapeError(error, "BLOB_CORRUPT")) {
    const { actual: actualHash, recordedBytes } = error;
    const found =
      recordedBytes === undefined
        ? `its bytes hash to ${actualHash}`
        : `it does not hold the ${recordedBytes} bytes its snapshot recorded`;
    return {
      kind: "blob_corrupt",
      hash,
      actualHash,
      referencedBy,
      message: `blob ${hash} is damaged: ${found} ${at}`,
    };
  }
  const summary = summarizeError(error);
  return {
    kind: "blob_unreadable",
    hash,
    referencedBy,
    error: summary,
    message: `blob ${hash} cannot be read: ${summary.message} ${at}`,
  };
}
