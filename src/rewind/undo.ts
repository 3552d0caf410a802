import { resolve } from "node:path";
import type { LockedSession, SessionRecord, SignalOption } from "../backend/types.js";
import { InvalidArgumentError, NothingToUndoError, SessionNotFoundError, StoreTamperedError } from "../core/errors.js";
import type { ArchivedLog } from "../backend/types.js";
import type { RewindPayload, StoredEvent } from "../core/events.js";
import { assertPayloadActedOn } from "../core/payload-check.js";
import type { SessionStore } from "../session/session-store.js";
import { lockedAccess } from "../session/locked-access.js";
import { isDroppedCheckpoint, readHorizonMark } from "../blobs/retention-horizon.js";
import { archivedEvents, isArchivedLog, readArchive, type RewindArchive } from "../blobs/archives.js";
import { SequenceRuns } from "../core/reappended.js";
import { completeIntent, writeIntent, type IntentDone, type RewindIntent, type RewindStep } from "./intent.js";
import { settleFailedRewind } from "./roll-back.js";
import { realWorkspaceOf } from "../checkpoint/confine.js";
import { lockWorkspace, type WorkspaceLock } from "./workspace-lock.js";
import { assertExpectedHead, assertExpectedHeadForm } from "./expected-head.js";
import { writeIntentWithUndo } from "./undo-in-intent.js";
import { planFileChanges, type FilePlan } from "./plan.js";
import {
  UNDO_LIMITS,
  emptyReport,
  summarizePlan,
  withLateConflicts,
  withPatches,
  type RewindReport,
} from "./rewind.js";
import { diffPlannedChanges } from "./plan-diffs.js";
import { lastWrittenStates, ON_CONFLICT, settleConflicts, statesWrittenBy, type OnConflict } from "./conflicts.js";
import { signalOf } from "../core/defined-fields.js";
import { readySyncFilesystem } from "../core/sync-filesystem.js";

export interface UndoRewindOptions extends SignalOption {
  /** @default the workspace the rewind restored into */
  workspace?: string;
  /** Return what would change and touch nothing. @default false */
  dryRun?: boolean;
  /** A file changed outside the session since the rewind: as for `rewind`. @default "refuse" */
  onConflict?: OnConflict;
  onProgress?: (step: "planned" | "intent-written" | RewindStep) => void;
  /** Put each changed text file's unified diff in the report, as `rewind`'s `diffs`. @default false */
  diffs?: boolean;
  /**
   * The session's last sequence the caller decided at (the rewind's `markerSequence`, or a dry run's
   * `lastSequence`): when the tape has moved since, SEQUENCE_CONFLICT and nothing changes.
   * @default no check
   */
  expectedLastSequence?: number;
}

export interface UndoReport extends RewindReport {
  /** Sequence of the rewind marker that was undone. */
  undoneMarker: number;
  /** Events put back into the log (with new sequences). */
  eventsRestored: number;
}

/**
 * Puts back what the last rewind changed: its files byte for byte (from the before-snapshot it
 * took), and the events it cut, re-appended in order with new sequences (the undo marker's
 * `reappendedRanges` says which ones they were). Crash-safe like `rewind`. Throws NOTHING_TO_UNDO when the session has
 * no rewind, the last one was undone already, the session moved on since (events after its
 * marker), or it was made with `keepUndo: 0` / its archive expired.
 */
export async function undoRewind(
  store: SessionStore<any>,
  id: string,
  options: UndoRewindOptions = {},
): Promise<UndoReport> {
  const onConflict = options.onConflict ?? "refuse";
  if (!ON_CONFLICT.includes(onConflict))
    throw new InvalidArgumentError(
      `onConflict must be "refuse", "skip" or "overwrite", not ${JSON.stringify(onConflict)}.`,
    );
  assertExpectedHeadForm(options.expectedLastSequence);
  const record = await store.backend.getSession(id, signalOf(options));
  if (!record) throw new SessionNotFoundError(id);
  return lockedAccess(store).withLockedSession(
    id,
    async (locked) => {
      // Held from the conflict check to the last write (docs/ARCHITECTURE.md, "Workspace lock").
      const held: { workspaceLock?: WorkspaceLock } = {};
      try {
        return await undoLocked(store, locked, id, options, onConflict, record, held);
      } finally {
        await held.workspaceLock?.release();
      }
    },
    { ...signalOf(options), detectReentry: false }, // runs no user code while locked
  );
}

/** The rewind an undo undoes: the last event, a rewind marker not undone yet that kept its undo. */
type LastRewind = { last: StoredEvent; marker: RewindPayload; undo: NonNullable<RewindPayload["undo"]> };

/** The events an undo puts back, and their former sequences as runs. */
type UndoneEvents = {
  restoredEvents: StoredEvent[];
  formerSequences: SequenceRuns;
  byteRange: { archive: string; log: ArchivedLog } | undefined;
};

/** The undo under the session lock: the rewind it undoes, its events, its file plan, then intent and completion. */
async function undoLocked(
  store: SessionStore<any>,
  locked: LockedSession,
  id: string,
  options: UndoRewindOptions,
  onConflict: OnConflict,
  record: SessionRecord,
  held: { workspaceLock?: WorkspaceLock },
): Promise<UndoReport> {
  assertExpectedHead(id, options.expectedLastSequence, locked.lastSequence);
  const rewound = await lastRewind(store, id, options);
  const { last, marker, undo } = rewound;
  const events = await undoneEvents(store, id, rewound, options);
  const report: UndoReport = {
    ...emptyReport(marker.targetSequence, locked.lastSequence, marker.mode, options.dryRun ?? false),
    undoneMarker: last.sequence,
    eventsRestored: events.formerSequences.count,
  };
  let files: { plan: FilePlan; realWorkspace: string } | undefined;
  if (undo.files.length > 0) {
    const givenWorkspace = options.workspace ?? (undo.workspace || record.workspace);
    if (givenWorkspace === undefined)
      throw new InvalidArgumentError(`Pass \`workspace\`: session "${id}" records none.`);
    files = await planUndoFiles(store, id, options, onConflict, rewound, givenWorkspace, report, held);
  }
  readySyncFilesystem(files?.plan.changes.length ?? 0);
  options.onProgress?.("planned");
  if (report.dryRun) return report;
  return applyUndo(store, locked, id, options, rewound, events, files, report, held);
}

async function lastRewind(store: SessionStore<any>, id: string, options: UndoRewindOptions): Promise<LastRewind> {
  const last = await store.backend.lastEvent(id, signalOf(options));
  if (last?.type !== "session_rewind")
    throw new NothingToUndoError(
      id,
      last
        ? `the last event (#${last.sequence}, ${last.type}) is not a rewind; undo works right after one`
        : "the session is empty",
    );
  assertPayloadActedOn(last);
  const marker = last.payload as RewindPayload;
  if (marker.undoOf !== undefined)
    throw new NothingToUndoError(id, `the last rewind was already undone (by #${last.sequence})`);
  const undo = marker.undo;
  if (!undo) throw new NothingToUndoError(id, `rewind #${last.sequence} was made with keepUndo: 0`);
  if (isDroppedCheckpoint(last, await readHorizonMark(store.backend, id, signalOf(options))))
    throw new NothingToUndoError(
      id,
      `rewind #${last.sequence} is behind the retention horizon: its undo snapshot went`,
    );
  return { last, marker, undo };
}

/**
 * The events come back from the archive: all of them in the intent when it holds them (an older archive),
 * else streamed from its copied log bytes in step 4. Their former sequences are kept as runs, so the
 * marker's record of them follows the gaps in the numbers, not the events (docs/ARCHITECTURE.md, undo).
 */
async function undoneEvents(
  store: SessionStore<any>,
  id: string,
  { last, marker, undo }: LastRewind,
  options: UndoRewindOptions,
): Promise<UndoneEvents> {
  let restoredEvents: StoredEvent[] = [];
  const formerSequences = new SequenceRuns();
  let byteRange: { archive: string; log: ArchivedLog } | undefined;
  if (marker.eventsRemoved > 0) {
    const archive = undo.archive ? await readArchive(store.backend, id, undo.archive) : undefined;
    if (!archive)
      throw new NothingToUndoError(id, `the events rewind #${last.sequence} removed are no longer kept (keepUndo)`);
    const record = (form: string) => `records/${undo.archive}.${form}`;
    const cut = (event: StoredEvent, where: string) => {
      if (event.sequence <= marker.targetSequence || event.sequence >= last.sequence)
        throw new StoreTamperedError(id, `${where} holds #${event.sequence}, not cut`);
      if (event.sequence <= formerSequences.last)
        throw new StoreTamperedError(id, `${where} holds #${event.sequence} after #${formerSequences.last}`);
      formerSequences.add(event.sequence);
    };
    if (archive.log !== undefined || undo.archiveLog !== undefined) {
      byteRange = { archive: undo.archive!, log: checkedArchivedLog(id, undo.archive!, archive, undo, marker) };
      for await (const event of archivedEvents(store.backend, id, byteRange.archive, archive, signalOf(options)))
        cut(event, record("jsonl"));
    } else {
      restoredEvents = archive.events ?? [];
      for (const event of restoredEvents) cut(event, record("json"));
    }
  }
  return { restoredEvents, formerSequences, byteRange };
}

/** The files' part: the workspace (locked unless a dry run), the plan back to the undo snapshot, its conflicts. */
async function planUndoFiles(
  store: SessionStore<any>,
  id: string,
  options: UndoRewindOptions,
  onConflict: OnConflict,
  { last, undo }: LastRewind,
  givenWorkspace: string,
  report: UndoReport,
  held: { workspaceLock?: WorkspaceLock },
): Promise<{ plan: FilePlan; realWorkspace: string }> {
  const realWorkspace = await realWorkspaceOf(givenWorkspace);
  if (!report.dryRun) held.workspaceLock = await lockWorkspace(realWorkspace, signalOf(options));
  const wanted = new Map(undo.files.map((f) => [f.path, f]));
  const plan = await planFileChanges(store.backend, id, realWorkspace, resolve(givenWorkspace), wanted, UNDO_LIMITS);
  // The rewind's own marker, the last event, names what it wrote: usually every path the undo changes.
  const written = await lastWrittenStates(
    () => store.backend.readEvents(id, { toSequence: last.sequence - 1, ...signalOf(options) }),
    [last],
    realWorkspace,
    plan.current.files.map((record) => record.path),
  );
  const conflicts = settleConflicts(id, plan, written, onConflict, report.dryRun);
  if (conflicts.length > 0) report.conflicts = conflicts;
  await diffPlannedChanges(plan, realWorkspace, { patches: options.diffs ?? false });
  Object.assign(report, summarizePlan(plan));
  return { plan, realWorkspace };
}

/** The undo marker and the intent (the events back after the rewind's marker, renumbered), then its completion. */
async function applyUndo(
  store: SessionStore<any>,
  locked: LockedSession,
  id: string,
  options: UndoRewindOptions,
  { last, marker, undo }: LastRewind,
  { restoredEvents, formerSequences, byteRange }: UndoneEvents,
  files: { plan: FilePlan; realWorkspace: string } | undefined,
  report: UndoReport,
  held: { workspaceLock?: WorkspaceLock },
): Promise<UndoReport> {
  const plan = files?.plan;
  const realWorkspace = files?.realWorkspace;
  // The events come back after the marker, renumbered; the undo marker closes the batch.
  let next = last.sequence;
  const reappended = restoredEvents.map((event) => ({ ...event, sequence: ++next }));
  if (byteRange) next += formerSequences.count;
  const payload: RewindPayload = {
    targetSequence: marker.targetSequence,
    mode: marker.mode,
    undoOf: last.sequence,
    filesRestored: report.filesRestored,
    filesDeleted: report.filesDeleted,
    skipped: report.skipped,
    changes: report.changes.map(({ patch: _patch, ...change }) => change),
    eventsRemoved: 0,
    blobsPruned: 0,
    reappendedRanges: formerSequences.runs,
  };
  if (plan) {
    // An undo changes files too: keep their before-state, so a later rewind past it is exact.
    payload.undo = { workspace: realWorkspace!, files: plan.current.files };
    if (plan.changes.length > 0) payload.wrote = { workspace: realWorkspace!, files: statesWrittenBy(plan) };
  }
  const undoMarker = await lockedAccess(store).markerFor(id, { type: "session_rewind", payload });
  undoMarker.sequence = next + 1;
  const intent: RewindIntent = {
    kind: "undo",
    markerSequence: undoMarker.sequence,
    files: (plan?.changes ?? []).flatMap((c) => (c.becomes ? [c.becomes] : [])),
    truncateTo: last.sequence,
    append: [...reappended, undoMarker],
    dropArchives: undo.archive ? [undo.archive] : [],
    prune: false,
    before: plan?.current.files ?? [],
    onLateChange: options.onConflict ?? "refuse",
  };
  if (byteRange) intent.reappend = { ...byteRange, first: last.sequence + 1 };
  if (realWorkspace !== undefined) intent.workspace = realWorkspace;
  const undoSnapshot = plan ? plan.current : { files: [], blobs: new Map() };
  await writeIntentWithUndo(locked, undoSnapshot, intent, UNDO_LIMITS.concurrency, (unsynced) =>
    writeIntent(locked, intent, unsynced),
  );
  let done: IntentDone;
  try {
    options.onProgress?.("intent-written");
    held.workspaceLock?.assertHeld();
    done = await completeIntent(store.backend, locked, intent, options.onProgress, plan?.blobs, plan?.current.stamps);
  } catch (error) {
    done = await settleFailedRewind(store.backend, locked, intent, error); // rolled back, or finished after all
  }
  const finished = undoMarker.payload as RewindPayload;
  return {
    ...report,
    filesRestored: finished.filesRestored,
    filesDeleted: finished.filesDeleted,
    skipped: finished.skipped,
    changes: withPatches(finished.changes, report.changes),
    markerSequence: undoMarker.sequence,
    ...withLateConflicts(report.conflicts, done.late),
  };
}

/**
 * The archive's copied bytes must be what the rewind's marker (in the log) says they are, and its record must
 * say the same: an archive planted, edited or swapped for another is STORE_TAMPERED, before anything is planned.
 * The bytes themselves are checked against it as they are read.
 */
function checkedArchivedLog(
  id: string,
  name: string,
  archive: RewindArchive,
  undo: NonNullable<RewindPayload["undo"]>,
  marker: RewindPayload,
): ArchivedLog {
  const named = undo.archiveLog;
  if (
    !isArchivedLog(named) ||
    !isArchivedLog(archive.log) ||
    named.bytes !== archive.log.bytes ||
    named.sha256 !== archive.log.sha256 ||
    named.events !== archive.log.events ||
    named.events !== marker.eventsRemoved
  )
    throw new StoreTamperedError(id, `records/${name}.json is not the archive its rewind marker names`);
  return named;
}
