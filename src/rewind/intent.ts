import { createHash } from "node:crypto";
import type { ArchivedLog, LockedSession, StorageBackend } from "../backend/types.js";
import type { RewindPayload, StoredEvent } from "../core/events.js";
import { readVerifiedBlob } from "../blobs/store-then-reference.js";
import { recordedSizes } from "./recorded-sizes.js";
import { applyFileRecords, type ApplyResult } from "./apply-files.js";
import { plannedStates } from "./still-as-planned.js";
import { yieldIfLong } from "../core/time-slices.js";
import { archivedEvents, type RewindArchive } from "../blobs/archives.js";
import { findUnreferencedBlobs, pruneUnreferencedBlobs } from "../blobs/prune.js";
import { referencedBlobs } from "../blobs/references.js";
import { RewindFailedError } from "../core/errors.js";
import { storeUndoBlobs, undoBlobsOf } from "./undo-in-intent.js";
import type { RewindIntent } from "./rewind-intent.js";
import type { RewindConflict } from "../core/errors.js";
import { lateChangeHandler } from "./late-change.js";
import { forgetMarkerJson, prepareMarkerJson } from "../core/envelope.js";
import type { FileStamp } from "../checkpoint/file-stamps.js";

/** Name of the side record that makes a rewind (or an undo) crash-safe. */
export const REWIND_INTENT_RECORD = "rewind-intent";

export type { RewindIntent } from "./rewind-intent.js";

/**
 * Makes the intent durable, with the undo blobs written without an fsync (`unsyncedBlobs`) durable no later. If
 * writing it fails, any half-written record is removed too, so a
 * rewind the caller saw fail is not completed behind its back by the next lock holder.
 */
export async function writeIntent(
  locked: LockedSession,
  intent: RewindIntent,
  unsyncedBlobs: readonly string[] = [],
): Promise<void> {
  try {
    if (unsyncedBlobs.length === 0) await locked.writeRecord(REWIND_INTENT_RECORD, intent);
    else if (locked.writeRecordWithBlobs)
      await locked.writeRecordWithBlobs(REWIND_INTENT_RECORD, intent, unsyncedBlobs);
    else {
      await locked.syncBlobs?.(unsyncedBlobs);
      await locked.writeRecord(REWIND_INTENT_RECORD, intent);
    }
  } catch (error) {
    await locked.deleteRecord(REWIND_INTENT_RECORD).catch(() => undefined);
    throw error;
  }
}

export type RewindStep = "files-restored" | "log-archived" | "log-truncated" | "blobs-pruned" | "marker-appended";

/**
 * Runs steps 1-4 of a rewind (or an undo) whose intent is durable, under the one held lock:
 * (1) make the files what the intent says, (2) truncate the log, (3) drop expired archives and
 * prune blobs nothing references, (4) append the events and the marker. Then the intent goes.
 * `verified`: blob bytes the caller read and checked against their hash already (its plan), used
 * instead of reading them again; recovery passes none and reads every blob from the store. `stamps`: what a stat
 * said of the files the plan hashed (file-stamps.ts), so that the last look before a write need not hash them again.
 */
export async function completeIntent(
  backend: StorageBackend,
  locked: LockedSession,
  intent: RewindIntent,
  onStep: (step: RewindStep) => void = () => {},
  verified?: ReadonlyMap<string, Buffer>,
  stamps?: ReadonlyMap<string, FileStamp>,
): Promise<IntentDone> {
  if (locked.lastSequence >= intent.markerSequence) return finishCompleted(backend, locked, intent);
  const late: RewindConflict[] = [];
  // Step 2 starts only once step 1 is done, so a log already cut back means the files are done —
  // and their blobs may be pruned already (keepUndo: 0 keeps no archive): step 1 must not run again.
  const filesDone =
    intent.kind === "rewind" &&
    locked.lastSequence <= intent.truncateTo &&
    intent.truncateTo < intent.markerSequence - 1;
  const { refused, changed } = filesDone
    ? { refused: [], changed: [] }
    : await restoreIntentFiles(backend, locked, intent, late, verified, stamps);
  onStep("files-restored");
  const marker = intent.append[intent.append.length - 1]!.payload as RewindPayload;
  // In one transaction where the backend has them; not where a crash left part of the log's steps done (the old
  // way, or an undo streamed from its archive, appended on its own below).
  if (locked.finishRewind && !filesDone && !intent.reappend && locked.lastSequence < intent.append[0]!.sequence) {
    const blobsPruned = await finishInOneTransaction(backend, locked, intent, marker, { refused, changed });
    for (const step of STEPS_IN_ONE_TRANSACTION)
      if (step !== "log-archived" || intent.archive?.copyAfter !== undefined) onStep(step);
    return { blobsPruned, refused, late };
  }
  if (intent.archive?.copyAfter !== undefined) {
    await archiveCutPart(backend, locked, intent, marker);
    onStep("log-archived");
  }
  await locked.truncateAfter(intent.truncateTo); // also drops a partial append from a crashed attempt
  onStep("log-truncated");
  const blobsPruned = await dropAndPrune(backend, locked, intent);
  onStep("blobs-pruned");
  marker.blobsPruned = blobsPruned;
  if (refused.length > 0) reportRefused(marker, refused);
  if (changed.length > 0) reportChangedMeanwhile(marker, changed);
  if (intent.reappend) await appendArchived(backend, locked, intent, intent.reappend);
  else await appendWithMarker(locked, intent.append);
  onStep("marker-appended");
  await finish(locked, intent, marker);
  return { blobsPruned, refused, late };
}

/** Appends the events ending with the marker, its line made beforehand in time slices (envelope.ts). */
async function appendWithMarker(locked: LockedSession, events: readonly StoredEvent[]): Promise<void> {
  const marker = events[events.length - 1]!;
  await prepareMarkerJson(marker);
  try {
    await locked.append(events, { sync: true });
  } finally {
    forgetMarkerJson(marker);
  }
}

const STEPS_IN_ONE_TRANSACTION: readonly RewindStep[] = [
  "log-archived",
  "log-truncated",
  "blobs-pruned",
  "marker-appended",
];

/**
 * Steps 2-4 and the clean-up through {@link LockedSession.finishRewind}: the cut part copied, then in one
 * transaction the log cut, expired archives and unreferenced blobs dropped, the marker appended, the archive
 * record written and the intent deleted. What to prune is found first, by reading the log as the cut will leave
 * it. Returns how many blobs this rewind counts as pruned.
 */
async function finishInOneTransaction(
  backend: StorageBackend,
  locked: LockedSession,
  intent: RewindIntent,
  marker: RewindPayload,
  found: { refused: string[]; changed: string[] },
): Promise<number> {
  const unreferenced = intent.prune
    ? await findUnreferencedBlobs(backend, locked.sessionId, {
        alsoKeep: [...intent.append, ...(intent.archive?.events ?? [])],
        alsoKeepBlobs: intent.archive?.blobs ?? [],
        ignoreArchives: intent.dropArchives,
        logThrough: intent.truncateTo,
        ...(intent.pruneCandidates && {
          candidates: intent.pruneCandidates,
          exists: (hash: string) => locked.hasBlob(hash),
        }),
      })
    : [];
  const blobsPruned = Math.max(0, unreferenced.length - (intent.scratchBlobs ?? 0));
  marker.blobsPruned = blobsPruned;
  if (found.refused.length > 0) reportRefused(marker, found.refused);
  if (found.changed.length > 0) reportChangedMeanwhile(marker, found.changed);
  const { name, copyAfter } = intent.archive ?? {};
  await locked.finishRewind!({
    ...(name !== undefined && copyAfter !== undefined && { archive: { after: copyAfter, name } }),
    truncateAfter: intent.truncateTo,
    deleteBlobs: unreferenced,
    deleteRecords: [...intent.dropArchives, REWIND_INTENT_RECORD],
    finalWrites(log) {
      if (log && marker.undo) marker.undo.archiveLog = log;
      const archive = archiveRecordOf(intent, marker);
      return { append: intent.append, writeRecords: archive ? [{ name: name!, value: archive }] : [] };
    },
  });
  return blobsPruned;
}

/**
 * Done before a crash that came between appending the marker and dropping the intent — if the event at its
 * number is the marker itself: only the clean-up is left. Anything else there (an append that took its number)
 * means the rewind never finished, and finishing it now would cut acknowledged events.
 */
async function finishCompleted(
  backend: StorageBackend,
  locked: LockedSession,
  intent: RewindIntent,
): Promise<IntentDone> {
  const marker = intent.append[intent.append.length - 1]!;
  const atMarker = await eventAt(backend, locked.sessionId, intent.markerSequence);
  if (atMarker?.id !== marker.id)
    throw new RewindFailedError(locked.sessionId, false, {
      reason:
        `event ${intent.markerSequence} is not its marker ${marker.id}; ` +
        "restore the files by hand, then delete the rewind-intent record",
    });
  await finish(locked, intent, atMarker.payload as RewindPayload);
  return { blobsPruned: 0, refused: [], late: [] };
}

/**
 * Step 1: the files made what the intent says. The undo blobs the intent carries and the files are written, and
 * waited for, at the same time: those the marker names (its undo snapshot). With keepUndo 0 it names none; a
 * roll-back takes them from the intent. Paths found changed late are added to `late`.
 */
async function restoreIntentFiles(
  backend: StorageBackend,
  locked: LockedSession,
  intent: RewindIntent,
  late: RewindConflict[],
  verified: ReadonlyMap<string, Buffer> | undefined,
  stamps: ReadonlyMap<string, FileStamp> | undefined,
): Promise<ApplyResult> {
  const named = referencedBlobs(intent.append);
  const undoBlobs = new Map(
    [...undoBlobsOf(locked.sessionId, intent.undoBlobs ?? [])].filter(([hash]) => named.has(hash)),
  );
  const sizes = recordedSizes(intent.files);
  // Each pass over the records is a few milliseconds for a 1,000-file rewind: one after another without a turn
  // they held the event loop 20 ms (docs/ARCHITECTURE.md, "Batched file work", time slices).
  await yieldIfLong();
  const planned = plannedStates(intent.before ?? [], intent.files);
  await yieldIfLong();
  const apply = (workspace: string) =>
    applyFileRecords(
      workspace,
      intent.files,
      async (hash) =>
        verified?.get(hash) ?? readVerifiedBlob(backend, locked.sessionId, hash, { bytes: sizes.get(hash) }),
      {
        operation: operationOf(locked.sessionId, intent, "apply"),
        planned,
        ...(stamps ? { stamps } : {}),
        // written again in place, never deleted on failure: files may be half done by then
        onChanged: lateChangeHandler(locked, intent, () => locked.writeRecord(REWIND_INTENT_RECORD, intent), late),
      },
    );
  const steps = await Promise.allSettled([
    intent.workspace !== undefined && intent.files.length > 0 ? apply(intent.workspace) : { refused: [], changed: [] },
    storeUndoBlobs(backend, locked, undoBlobs, verified !== undefined),
  ]);
  for (const step of steps) if (step.status === "rejected") throw step.reason;
  return (steps[0] as PromiseFulfilledResult<ApplyResult>).value;
}

/** Step 3: expired archives dropped, unreferenced blobs pruned; returns how many this rewind counts as pruned. */
async function dropAndPrune(backend: StorageBackend, locked: LockedSession, intent: RewindIntent): Promise<number> {
  // An undo's own archive goes only once its events are back in the log (finish).
  for (const name of intent.dropArchives)
    if (name !== intent.reappend?.archive) await locked.deleteRecord(name, { archivedLog: true });
  const pruned = intent.prune
    ? await pruneUnreferencedBlobs(
        backend,
        locked,
        [...intent.append, ...(intent.archive?.events ?? [])],
        intent.pruneCandidates,
        intent.archive?.blobs,
      )
    : 0;
  return Math.max(0, pruned - (intent.scratchBlobs ?? 0));
}

/** What {@link completeIntent} did beyond the intent: blobs pruned, paths refused, paths found changed late. */
export interface IntentDone {
  blobsPruned: number;
  /** Paths found leading outside the workspace at the last moment, left alone. */
  refused: string[];
  /** Paths found changed just before their write (late-change.ts), with what was done about each. */
  late: RewindConflict[];
}

/**
 * Copies the part of the log the rewind cuts beside the records, before the log is cut, and names it in the
 * marker (`undo.archiveLog`). Run again after a crash: while the log is not cut yet, the copy is made again
 * (replacing any earlier one); once it is, the copy was finished before, and is measured again. If a power
 * loss took it (it is not fsynced, as the archive record never was), the rewind completes without its undo
 * of the events: consistency before the undo.
 */
async function archiveCutPart(
  backend: StorageBackend,
  locked: LockedSession,
  intent: RewindIntent,
  marker: RewindPayload,
): Promise<void> {
  const { name, copyAfter } = intent.archive!;
  let log: ArchivedLog | undefined;
  if (locked.lastSequence > intent.truncateTo) log = await locked.archiveLogAfter!(copyAfter!, name);
  else {
    // The copy is not fsynced (a power loss may have cut it short): kept only if it holds as many lines as
    // the rewind cut, which undo checks again with its sha256.
    log = await measureArchivedLog(backend, locked.sessionId, name);
    if (log?.events !== marker.eventsRemoved) log = undefined;
  }
  if (log && marker.undo) marker.undo.archiveLog = log;
  else {
    if (marker.undo) {
      delete marker.undo.archive;
      delete marker.undo.archiveLog; // set by an attempt before, in this process
    }
    await locked.deleteRecord(name, { archivedLog: true }); // what is left of it, if anything
  }
}

async function measureArchivedLog(
  backend: StorageBackend,
  sessionId: string,
  name: string,
): Promise<ArchivedLog | undefined> {
  const hash = createHash("sha256");
  let bytes = 0;
  let events = 0;
  for await (const chunk of backend.readArchivedLog?.(sessionId, name) ?? []) {
    hash.update(chunk);
    bytes += chunk.length;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, nl + 1)) events++;
  }
  return bytes === 0 ? undefined : { bytes, sha256: hash.digest("hex"), events };
}

/**
 * Step 4 of an undo of a byte-range archive: the archived events, renumbered, then the undo marker, as one
 * batch streamed from the archive; an archive that is not what its marker says (STORE_TAMPERED, found by the
 * last line at the latest) takes the batch back. A backend without `appendStream` gets them in one array.
 */
async function appendArchived(
  backend: StorageBackend,
  locked: LockedSession,
  intent: RewindIntent,
  reappend: NonNullable<RewindIntent["reappend"]>,
): Promise<void> {
  const archive: RewindArchive = { markerSequence: intent.truncateTo, log: reappend.log };
  async function* batch(): AsyncGenerator<StoredEvent> {
    let next = reappend.first;
    // Renumbered in place: the event keeps its payload's text, written again as it was (payloadAsText).
    const source = archivedEvents(backend, locked.sessionId, reappend.archive, archive, { payloadAsText: true });
    for await (const event of source) {
      event.sequence = next++;
      yield event;
    }
    yield* intent.append;
  }
  if (locked.appendStream) {
    // The undo's marker line made beforehand in time slices, as a rewind's is (appendWithMarker): serialised
    // inside the stream, a 1,000-file marker held the event loop 30-45 ms (docs/ARCHITECTURE.md, "Batched file
    // work").
    const marker = intent.append.at(-1);
    if (marker) await prepareMarkerJson(marker);
    try {
      await locked.appendStream(batch(), { first: reappend.first, last: intent.markerSequence }, { sync: true });
    } finally {
      if (marker) forgetMarkerJson(marker);
    }
    return;
  }
  const events: StoredEvent[] = [];
  for await (const event of batch()) events.push(event);
  await locked.append(events, { sync: true });
}

/**
 * After the marker: the cut events become the archive (its copied bytes named by the marker, or the events
 * the intent carries), the archive an undo streamed its events from goes (only now: they are back in the
 * log), then the intent goes. Idempotent. `marker`: the marker as it is in the log.
 */
async function finish(locked: LockedSession, intent: RewindIntent, marker: RewindPayload): Promise<void> {
  const archive = archiveRecordOf(intent, marker);
  if (archive) await locked.writeRecord(intent.archive!.name, archive, { durable: false });
  if (intent.reappend) await locked.deleteRecord(intent.reappend.archive, { archivedLog: true });
  await locked.deleteRecord(REWIND_INTENT_RECORD);
}

/** The archive record of the events a rewind cut: their copied bytes as the marker names them, or the events. */
function archiveRecordOf(intent: RewindIntent, marker: RewindPayload): RewindArchive | undefined {
  const events = intent.archive?.events;
  const log = marker.undo?.archiveLog;
  if (!intent.archive || (events === undefined && log === undefined)) return undefined;
  return { markerSequence: intent.markerSequence, ...(log ? { log } : { events: events! }) };
}

/** Paths found outside the workspace at the last moment were not touched: say so in the marker. */
function reportRefused(marker: RewindPayload, refused: readonly string[]): void {
  const set = new Set(refused);
  for (const change of marker.changes) {
    if (!set.has(change.path) || change.action === "skip") continue;
    if (change.action === "restore") marker.filesRestored--;
    else marker.filesDeleted--;
    change.action = "skip";
    change.reason = "outside_workspace";
    delete change.diff; // nothing changed there after all
    marker.skipped.push(change.path);
  }
}

/**
 * Paths found changed after the conflict check, just before they were to be replaced, were left as they are: a
 * conflict found late, skipped whatever `onConflict` said (the rest is written by then). Their before-state goes
 * from the undo snapshot (an undo would put back what the edit replaced), and nothing is recorded as written.
 */
function reportChangedMeanwhile(marker: RewindPayload, changed: readonly string[]): void {
  const set = new Set(changed);
  for (const change of marker.changes) {
    if (!set.has(change.path) || change.action === "skip") continue;
    if (change.action === "restore") marker.filesRestored--;
    else marker.filesDeleted--;
    change.action = "skip";
    change.reason = "conflict: changed during the rewind";
    delete change.diff;
    delete change.unrecoverable;
    marker.skipped.push(change.path);
  }
  const left = (path: string) => [...set].some((p) => path === p || path.startsWith(`${p}/`));
  if (marker.undo) marker.undo.files = marker.undo.files.filter((f) => !left(f.path));
  if (marker.wrote) marker.wrote.files = marker.wrote.files.filter((f) => !set.has(f.path));
}

async function eventAt(backend: StorageBackend, sessionId: string, sequence: number): Promise<StoredEvent | undefined> {
  for await (const event of backend.readEvents(sessionId, { fromSequence: sequence, toSequence: sequence }))
    return event;
  return undefined;
}

/** Names one step of one rewind or undo, the same in every run of it (its temp names derive from it). */
export function operationOf(sessionId: string, intent: RewindIntent, step: "apply" | "roll-back"): string {
  return `${sessionId}/${intent.kind}/${intent.markerSequence}/${step}`;
}
