// Maintenance, verify: reads a whole session and says what is damaged, changing nothing.
import type { SessionRecord } from "../backend/types.js";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { isAgentTapeError, SessionNotFoundError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";
import { archivedEvents, isArchiveName, isArchiveShape } from "../blobs/archives.js";
import { checkBlob } from "../blobs/store-then-reference.js";
import { HORIZON_RECORD, readHorizonMark } from "../blobs/retention-horizon.js";
import type { SessionStore } from "../session/session-store.js";
import { summarizeError } from "./failure.js";
import { REWIND_INTENT_RECORD } from "../rewind/intent.js";
import { checkIntent, intentShapeProblem } from "../rewind/intent-check.js";
import { Verification } from "./verification.js";
import type { BlobReference, VerifyOptions, VerifyProblem, VerifyReport } from "./verify-report.js";
import { isTheRecordedWorkspace } from "../checkpoint/recorded-workspace.js";
import { UndoMarkersInLog } from "./undo-marker.js";
import { signalOf } from "../core/defined-fields.js";

export { VERIFY_NEVER_CHECKS } from "./verify-report.js";
export type {
  BlobReference,
  VerifyOptions,
  VerifyProblem,
  VerifyProblemKind,
  VerifyProgress,
  VerifyReport,
} from "./verify-report.js";

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
  const run = new Verification(store.backend, sessionId, options);
  const meta = await readSessionRecord(run);
  await readHorizon(run);
  const lastSequence = await readLog(run);
  if (meta !== undefined) await checkWorkspace(run, meta.workspace);
  await checkRecords(
    store,
    sessionId,
    options.signal,
    run.problems,
    (event, archive) => run.note(event, archive),
    lastSequence,
    run.notChecked,
  );
  await checkBlobs(run);
  return run.report();
}

/** session.json, or undefined (reported) when it cannot be read; SESSION_NOT_FOUND and INVALID_SESSION_ID throw. */
async function readSessionRecord(run: Verification): Promise<SessionRecord | undefined> {
  const { backend, sessionId, signal } = run;
  try {
    const meta = await backend.getSession(sessionId, signalOf(signal));
    if (meta === undefined) throw new SessionNotFoundError(sessionId);
    return meta;
  } catch (error) {
    if (signal?.aborted) throw error;
    if (isAgentTapeError(error, "INVALID_SESSION_ID") || isAgentTapeError(error, "SESSION_NOT_FOUND")) throw error;
    const summary = summarizeError(error);
    run.problems.push({
      kind: "metadata_unreadable",
      message: `session.json cannot be read: ${summary.message}`,
      error: summary,
    });
    return undefined;
  }
}

/** Checkpoints retention dropped have no blobs left to check (docs/ARCHITECTURE.md, "Retention"). */
async function readHorizon(run: Verification): Promise<void> {
  try {
    run.horizon = await readHorizonMark(run.backend, run.sessionId, signalOf(run.signal));
  } catch (error) {
    if (run.signal?.aborted) throw error;
    run.problems.push({ kind: "record_malformed", record: HORIZON_RECORD, message: summarizeError(error).message });
  }
  if (run.horizon.through > 0)
    run.notChecked.push(
      `the blobs of checkpoints retention dropped (up to #${run.horizon.through}): removed on purpose`,
    );
}

/**
 * Reads the log, noting each event (run.note) and reporting each corrupt line; returns the last sequence read.
 * Streamed rather than store.salvage(): the same skip-and-report of bad lines, in flat memory.
 */
async function readLog(run: Verification): Promise<number> {
  const { signal, problems, progress } = run;
  let lastSequence = 0;
  const undoMarkers = new UndoMarkersInLog();
  try {
    const source = run.backend.readEvents(run.sessionId, {
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
      undoMarkers.add(event, run.note(event));
      if (progress.eventsRead % 1000 === 0) run.onProgress?.({ ...progress });
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
  for (const { sequence, reason } of undoMarkers.problems()) run.inconsistentMarker(sequence, reason);
  return lastSequence;
}

/** session.json's workspace against the snapshots', or a note that nothing on the tape holds it. */
async function checkWorkspace(run: Verification, workspace: string | undefined): Promise<void> {
  const problem = await workspaceProblem(workspace, run.recordedWorkspaces);
  if (problem) run.problems.push(problem);
  else if (run.recordedWorkspaces.size === 0 && workspace !== undefined)
    run.notChecked.push(
      `session.json's workspace ("${workspace}"): no snapshot on the tape records one to hold it to ` +
        "(a rewind of such a tape changes no file)",
    );
}

/** Every blob the tape and its archives name: present, and matching its sha256 (8 at a time). */
async function checkBlobs(run: Verification): Promise<void> {
  const { signal, progress } = run;
  const hashes = [...run.firstReference.keys()];
  progress.blobsToCheck = hashes.length;
  const blobProblems = new Map<string, VerifyProblem>();
  await forEachLimited(hashes, 8, async (hash) => {
    signal?.throwIfAborted();
    try {
      // Hashed as a stream (checkBlob): 8 blobs at once hold a chunk each, whatever the store holds or claims.
      await checkBlob(run.backend, run.sessionId, hash, { ...signalOf(signal), bytes: run.recordedBytes.get(hash) });
    } catch (error) {
      if (signal?.aborted) throw error;
      blobProblems.set(hash, blobProblem(hash, run.firstReference.get(hash)!, error));
    }
    progress.blobsChecked++;
    run.onProgress?.({ ...progress });
  });
  // Parallel checks finish in any order; report in the order the tape names the blobs.
  for (const hash of hashes) {
    const problem = blobProblems.get(hash);
    if (problem) run.problems.push(problem);
  }
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
