import { resolve } from "node:path";
import { assertPayloadActedOn } from "../core/payload-check.js";
import { yieldIfLong } from "../core/time-slices.js";
import type { LockedSession } from "../backend/types.js";
import {
  BeyondRetentionHorizonError,
  InvalidArgumentError,
  SessionNotFoundError,
  UnrecoverableChangeError,
  type RewindConflict,
} from "../core/errors.js";
import {
  RewindMode,
  type CheckpointPayload,
  type FileChange,
  type RewindPayload,
  type StoredEvent,
} from "../core/events.js";
import type { SessionStore } from "../session/session-store.js";
import { lockedAccess } from "../session/locked-access.js";
import { UNDO_LIMITS } from "./undo-limits.js";
import { archiveName, archivedEvents, listArchives, readArchive } from "../blobs/archives.js";
import { addReferences } from "../blobs/references.js";
import { isDroppedCheckpoint, readHorizonMark } from "../blobs/retention-horizon.js";
import { completeIntent, writeIntent, type IntentDone, type RewindIntent } from "./intent.js";
import { settleFailedRewind } from "./roll-back.js";
import { carriesUndo, writeIntentWithUndo } from "./undo-in-intent.js";
import { realWorkspaceOf } from "../checkpoint/confine.js";
import { recordedWorkspace } from "./recorded-workspace.js";
import { hardLinksSplit } from "./hard-link-splits.js";
import { ignoredChangesIn } from "../checkpoint/workspace-index/ignored-changes.js";
import { closestSnapshotPerPath, planFileChanges, type FilePlan } from "./plan.js";
import { diffPlannedChanges } from "./plan-diffs.js";
import { totalDiffs } from "../core/file-diff.js";
import { lockWorkspace, type WorkspaceLock } from "./workspace-lock.js";
import { assertExpectedHead, assertExpectedHeadForm } from "./expected-head.js";
import { assertTargetRead, checkTargetForm, resolveTarget } from "./target.js";
import { lastWrittenStates, ON_CONFLICT, settleConflicts, statesWrittenBy, type OnConflict } from "./conflicts.js";
import { signalOf } from "../core/defined-fields.js";
import { readySyncFilesystem } from "../core/sync-filesystem.js";
import type { RewindOptions, RewindReport, ReportedChange } from "./rewind-report.js";

export type { RewindOptions, RewindReport, ReportedChange } from "./rewind-report.js";

export { UNDO_LIMITS };

/**
 * Winds the session back to `toSequence`: files from the closest-to-target before-snapshots,
 * the log truncated, unreferenced blobs pruned, and a `session_rewind` marker appended — four
 * steps under one hold of the session lock, made crash-safe by an intent record (a crash
 * anywhere leaves a session the next writer finishes; readers meanwhile report it pending). A
 * rewind that fails is rolled back (REWIND_FAILED, `rolledBack: true`); one that cannot be is never
 * applied later: the next writer rolls it back once the cause is fixed (docs/ARCHITECTURE.md,
 * "Rewind intent"). The marker takes the sequence after the highest ever written, never a reused one.
 * Throws SEQUENCE_OUT_OF_RANGE past the end of the log, SEQUENCE_NOT_ON_TAPE for a sequence no
 * longer on it; a target at the end is a no-op report.
 * Throws BEYOND_RETENTION_HORIZON, changing nothing, when a checkpoint it needs was dropped by
 * retention (a "conversation" rewind needs none).
 */
export async function rewind(store: SessionStore<any>, id: string, options: RewindOptions): Promise<RewindReport> {
  const settings = rewindSettings(options);
  const givenWorkspace = await workspaceToRewind(store, id, options, settings.touchesFiles);
  return lockedAccess(store).withLockedSession(
    id,
    async (locked) => {
      // Held from the conflict check to the last write (docs/ARCHITECTURE.md, "Workspace lock").
      const held: HeldWorkspace = {};
      try {
        return await rewindLocked(store, locked, id, options, settings, givenWorkspace, held);
      } finally {
        await held.workspaceLock?.release();
      }
    },
    { ...signalOf(options), detectReentry: false }, // runs no user code while locked
  );
}

/** How this rewind goes, from its options: each checked before anything is read. */
interface RewindSettings {
  mode: RewindMode;
  touchesFiles: boolean;
  onConflict: OnConflict;
  keepUndo: number;
}

/** The workspace lock a rewind takes once it knows the folder (none for a dry run or a conversation rewind). */
interface HeldWorkspace {
  workspaceLock?: WorkspaceLock;
}

function rewindSettings(options: RewindOptions): RewindSettings {
  checkTargetForm(options);
  const mode = RewindMode.safeParse(options.mode ?? "all");
  if (!mode.success)
    throw new InvalidArgumentError(
      `mode must be "all", "files" or "conversation", not ${JSON.stringify(options.mode)}.`,
    );
  const onConflict = options.onConflict ?? "refuse";
  if (!ON_CONFLICT.includes(onConflict))
    throw new InvalidArgumentError(
      `onConflict must be "refuse", "skip" or "overwrite", not ${JSON.stringify(onConflict)}.`,
    );
  assertExpectedHeadForm(options.expectedLastSequence);
  const keepUndo = options.keepUndo ?? 1;
  if (!Number.isSafeInteger(keepUndo) || keepUndo < 0)
    throw new InvalidArgumentError("keepUndo must be a non-negative integer.");
  return { mode: mode.data, touchesFiles: mode.data !== "conversation", onConflict, keepUndo };
}

/** The workspace given or recorded in session.json; SESSION_NOT_FOUND, or INVALID_ARGUMENT when files need one. */
async function workspaceToRewind(
  store: SessionStore<any>,
  id: string,
  options: RewindOptions,
  touchesFiles: boolean,
): Promise<string | undefined> {
  const record = await store.backend.getSession(id, signalOf(options));
  if (!record) throw new SessionNotFoundError(id);
  const givenWorkspace = options.workspace ?? record.workspace;
  if (touchesFiles && givenWorkspace === undefined)
    throw new InvalidArgumentError(
      `Session "${id}" has no workspace: pass \`workspace\`, or rewind with mode "conversation".`,
    );
  return givenWorkspace;
}

/** The rewind under the session lock: target, cut events, file plan, then the intent and its completion. */
async function rewindLocked(
  store: SessionStore<any>,
  locked: LockedSession,
  id: string,
  options: RewindOptions,
  settings: RewindSettings,
  givenWorkspace: string | undefined,
  held: HeldWorkspace,
): Promise<RewindReport> {
  const { touchesFiles, keepUndo } = settings;
  const last = locked.lastSequence;
  assertExpectedHead(id, options.expectedLastSequence, last);
  const target = await resolveTarget(store.backend, id, options, last, {
    ...signalOf(options),
    callerReadsFromTarget: true,
  });
  const report = emptyReport(target, last, settings.mode, options.dryRun ?? false);
  if (target === last) return report;

  // Only the events after the target are read here; what the tape last wrote to each path (the conflicts)
  // is decided by them when they name every path the plan changes, else by the whole tape (conflicts.ts).
  // The cut events are held only for what needs them (the file plan, the archive for undo); otherwise
  // counted and their blobs noted as they stream by, so a cut of any length costs no memory.
  // A backend that can copy a byte range keeps the cut part that way for undo (see prepareRewind).
  const byteRange = locked.archiveLogAfter !== undefined && store.backend.readArchivedLog !== undefined;
  const keepAfter = touchesFiles || (keepUndo > 0 && !(options.dryRun ?? false) && !byteRange);
  const { after, cut } = await readCutEvents(store, id, target, last, keepAfter, options);
  if (settings.mode !== "files") report.eventsRemoved = cut.events;
  if (touchesFiles) await assertCheckpointsKept(store, id, target, after, options);

  const files = touchesFiles
    ? await planRewindFiles(store, id, options, settings, givenWorkspace!, target, after, report, held)
    : undefined;
  readySyncFilesystem(files?.plan.changes.length ?? 0);
  options.onProgress?.("planned");
  if (report.dryRun) return report;
  if (report.unrecoverable && keepUndo > 0 && options.allowUnrecoverable !== true)
    throw new UnrecoverableChangeError(id, report.unrecoverable);

  const markerSequence = last + 1;
  const intent = await prepareRewind(store, locked, {
    report,
    plan: files?.plan,
    realWorkspace: files?.realWorkspace,
    after,
    cutBlobs: cut.blobs,
    markerSequence,
    keepUndo,
    byteRange,
    // a late conflict is one nobody was shown: overwritten only where the caller agreed to any
    onLateChange: settings.onConflict === "overwrite" && options.overwriteOnly ? "refuse" : settings.onConflict,
  });
  let done: IntentDone;
  try {
    options.onProgress?.("intent-written");
    held.workspaceLock?.assertHeld();
    const { blobs, current } = files?.plan ?? {};
    done = await completeIntent(store.backend, locked, intent, options.onProgress, blobs, current?.stamps);
  } catch (error) {
    done = await settleFailedRewind(store.backend, locked, intent, error);
  }
  const marker = intent.append[intent.append.length - 1]!.payload as RewindPayload;
  return {
    ...report,
    filesRestored: marker.filesRestored,
    filesDeleted: marker.filesDeleted,
    skipped: marker.skipped,
    changes: withPatches(marker.changes, report.changes),
    blobsPruned: done.blobsPruned,
    markerSequence,
    ...withLateConflicts(report.conflicts, done.late),
  };
}

/** The events after the target: counted, their blobs noted, held when `keepAfter`; the target shown on the tape. */
async function readCutEvents(
  store: SessionStore<any>,
  id: string,
  target: number,
  last: number,
  keepAfter: boolean,
  options: RewindOptions,
): Promise<{ after: StoredEvent[]; cut: { events: number; blobs: Set<string> } }> {
  const after: StoredEvent[] = [];
  const cut = { events: 0, blobs: new Set<string>() };
  // Read from the target itself: finding it first is what shows it is on the tape (target.ts).
  let first: StoredEvent | undefined;
  for await (const event of store.backend.readEvents(id, {
    fromSequence: Math.max(target, 1),
    ...signalOf(options),
  })) {
    first ??= event;
    if (target > 0 && first.sequence !== target) break; // not on the tape: refused below
    if (event.sequence === target) continue;
    assertPayloadActedOn(event); // a malformed checkpoint is refused here, before anything is planned
    cut.events++;
    addReferences(event, cut.blobs);
    if (keepAfter) after.push(event);
  }
  await assertTargetRead(store.backend, id, target, first, last, signalOf(options));
  return { after, cut };
}

/** A checkpoint retention dropped cannot put its files back: refuse rather than restore some paths only. */
async function assertCheckpointsKept(
  store: SessionStore<any>,
  id: string,
  target: number,
  after: readonly StoredEvent[],
  options: RewindOptions,
): Promise<void> {
  const horizon = await readHorizonMark(store.backend, id, signalOf(options));
  if (after.some((event) => isDroppedCheckpoint(event, horizon)))
    throw new BeyondRetentionHorizonError(id, target, horizon.through);
}

/**
 * The files' part: the workspace (locked unless a dry run), the plan, its conflicts settled as `onConflict`
 * says, its diffs and what the report tells of it.
 */
async function planRewindFiles(
  store: SessionStore<any>,
  id: string,
  options: RewindOptions,
  settings: RewindSettings,
  givenWorkspace: string,
  target: number,
  after: StoredEvent[],
  report: RewindReport,
  held: HeldWorkspace,
): Promise<{ plan: FilePlan; realWorkspace: string }> {
  // Named by the caller: trusted. Taken from session.json: only if the tape recorded the same folder.
  const workspace = options.workspace ?? (await recordedWorkspace(id, after, givenWorkspace));
  const realWorkspace = await realWorkspaceOf(workspace);
  if (!report.dryRun) held.workspaceLock = await lockWorkspace(realWorkspace, signalOf(options));
  const limits = { ...UNDO_LIMITS, maxFileBytes: options.maxFileBytes ?? UNDO_LIMITS.maxFileBytes };
  const plan = await planFileChanges(
    store.backend,
    id,
    realWorkspace,
    resolve(workspace),
    await closestSnapshotPerPath(after),
    limits,
  );
  // Each step from here walks every planned path in one go (4-6 ms each for 1,000 paths); run back to back with
  // nothing to wait on between them, they held the event loop as one (docs/ARCHITECTURE.md, "Batched file work").
  await yieldIfLong();
  const written = await lastWrittenStates(
    () => store.backend.readEvents(id, { toSequence: target, ...signalOf(options) }),
    after,
    realWorkspace,
    plan.current.files.map((record) => record.path),
  );
  await yieldIfLong();
  const conflicts = settleConflicts(id, plan, written, settings.onConflict, report.dryRun, options.overwriteOnly);
  if (conflicts.length > 0) report.conflicts = conflicts;
  await diffPlannedChanges(plan, realWorkspace, { patches: options.diffs ?? false });
  Object.assign(report, summarizePlan(plan));
  const ignoredChanges = ignoredChangesIn(after.flatMap(checkpointPayloadOf));
  if (ignoredChanges !== undefined) report.ignoredChanges = ignoredChanges;
  const split = await hardLinksSplit(realWorkspace, plan.changes, plan.current);
  if (split.length > 0) report.hardLinksSplit = split;
  return { plan, realWorkspace };
}

/**
 * Saves what an undo needs — the before-bytes of every path about to change (as blobs, or a few small
 * ones inside the intent), the events about to be cut — then writes the intent (fsynced). Until the
 * intent exists nothing has been touched; from then on the rewind will complete, even across a crash.
 */
async function prepareRewind(
  store: SessionStore<any>,
  locked: LockedSession,
  input: {
    report: RewindReport;
    plan: FilePlan | undefined;
    realWorkspace: string | undefined;
    /** The cut events: all of them when kept for undo. */
    after: StoredEvent[];
    /** The blobs the cut events reference. */
    cutBlobs: ReadonlySet<string>;
    markerSequence: number;
    keepUndo: number;
    /** Keep the cut part as a copy of its log bytes (locked.archiveLogAfter), not as the events. */
    byteRange: boolean;
    onLateChange: OnConflict;
  },
): Promise<RewindIntent> {
  const { report, plan, after, markerSequence, keepUndo } = input;
  const payload: RewindPayload = {
    targetSequence: report.targetSequence,
    mode: report.mode,
    filesRestored: report.filesRestored,
    filesDeleted: report.filesDeleted,
    skipped: report.skipped,
    changes: report.changes.map(({ patch: _patch, ...change }) => change), // diffs are for the reader, not the log
    eventsRemoved: report.eventsRemoved,
    blobsPruned: 0,
  };
  let archive: RewindIntent["archive"];
  if (keepUndo > 0) {
    const undo: NonNullable<RewindPayload["undo"]> = {
      workspace: input.realWorkspace ?? "",
      files: plan?.current.files ?? [],
    };
    if (report.eventsRemoved > 0) {
      // Copied as bytes in step "log-archived" (never parsed, held or serialised: a cut of 999k events costs
      // the memory of a chunk), the cut events' blobs kept meanwhile; or, without a byte-range copy, the events.
      const name = archiveName(markerSequence);
      archive = input.byteRange
        ? { name, copyAfter: report.targetSequence, blobs: [...input.cutBlobs] }
        : { name, events: after };
      undo.archive = archive.name;
    }
    payload.undo = undo;
  }
  if (plan && input.realWorkspace !== undefined && plan.changes.length > 0)
    payload.wrote = { workspace: input.realWorkspace, files: statesWrittenBy(plan) };
  const marker = await lockedAccess(store).markerFor(locked.sessionId, { type: "session_rewind", payload });
  marker.sequence = markerSequence;
  const kept = archive ? [archive.name] : [];
  const existing = await listArchives(store.backend, locked.sessionId);
  const intent: RewindIntent = {
    kind: "rewind",
    markerSequence,
    files: (plan?.changes ?? []).flatMap((c) => (c.becomes ? [c.becomes] : [])),
    truncateTo: report.mode === "files" ? locked.lastSequence : report.targetSequence,
    append: [marker],
    dropArchives: existing.filter((name) => !kept.includes(name)).slice(Math.max(0, keepUndo - kept.length)),
    prune: true,
    before: plan?.current.files ?? [],
    onLateChange: input.onLateChange,
  };
  intent.pruneCandidates = await blobsMaybeOrphaned(
    store,
    locked.sessionId,
    report,
    input.cutBlobs,
    intent.dropArchives,
  );
  if (input.realWorkspace !== undefined) intent.workspace = input.realWorkspace;
  if (archive) intent.archive = archive;
  // Kept even with keepUndo 0: a rewind that fails part way puts these back (roll-back.ts). Few and small,
  // they ride in the intent and are never stored (undo-in-intent.ts); otherwise they are stored, unreferenced
  // by the marker, and those this rewind adds go in its own prune. One already there keeps whatever referenced
  // it before (a shell command's file: the workspace index), so it is not this rewind's to prune.
  const beforeState = plan ? plan.current : { files: [], blobs: new Map() };
  if (keepUndo === 0) {
    const scratch: string[] = [];
    const stored = carriesUndo(beforeState.blobs) ? [] : beforeState.blobs.keys();
    for (const hash of stored) if (!(await locked.hasBlob(hash))) scratch.push(hash);
    if (scratch.length > 0) intent.scratchBlobs = scratch.length;
    intent.pruneCandidates = [...new Set([...intent.pruneCandidates!, ...scratch])];
  }
  await writeIntentWithUndo(locked, beforeState, intent, UNDO_LIMITS.concurrency, (unsynced) =>
    writeIntent(locked, intent, unsynced),
  );
  return intent;
}

/**
 * The blobs a rewind can leave with no reference: those of the events it cuts (a files-only rewind
 * cuts none) and of the archives it drops. Every other blob keeps the references it had.
 */
async function blobsMaybeOrphaned(
  store: SessionStore<any>,
  id: string,
  report: RewindReport,
  cutBlobs: ReadonlySet<string>,
  dropped: readonly string[],
): Promise<string[]> {
  const hashes = new Set<string>(report.mode === "files" ? [] : cutBlobs);
  for (const name of dropped) {
    const archive = await readArchive(store.backend, id, name);
    if (archive)
      for await (const event of archivedEvents(store.backend, id, name, archive)) addReferences(event, hashes);
  }
  return [...hashes];
}

/** A report of nothing done yet, filled in as the plan and the steps go. */
export function emptyReport(
  targetSequence: number,
  lastSequence: number,
  mode: RewindMode,
  dryRun: boolean,
): RewindReport {
  return {
    targetSequence,
    lastSequence,
    dryRun,
    mode,
    filesRestored: 0,
    filesDeleted: 0,
    skipped: [],
    changes: [],
    diffTotals: totalDiffs([]),
    eventsRemoved: 0,
    blobsPruned: 0,
  };
}

/** The report's view of a file plan: counts, skipped paths, and the changes without their records. */
export function summarizePlan(
  plan: FilePlan,
): Pick<RewindReport, "changes" | "filesRestored" | "filesDeleted" | "skipped" | "diffTotals" | "unrecoverable"> {
  const lost = plan.changes.flatMap((c) => (c.unrecoverable ?? []).map((u) => u.path));
  return {
    ...(lost.length > 0 ? { unrecoverable: lost } : {}),
    changes: plan.changes.map(({ becomes: _record, ...change }) => change),
    diffTotals: totalDiffs(plan.changes.map((c) => c.diff)),
    filesRestored: plan.changes.filter((c) => c.action === "restore").length,
    filesDeleted: plan.changes.filter((c) => c.action === "delete").length,
    skipped: plan.changes.filter((c) => c.action === "skip").map((c) => c.path),
  };
}

/** The conflicts the check found, then those found just before a write (late-change.ts); nothing when none. */
export function withLateConflicts(
  checked: readonly RewindConflict[] | undefined,
  late: readonly RewindConflict[],
): { conflicts?: RewindConflict[] } {
  const all = [...(checked ?? []), ...late];
  return all.length > 0 ? { conflicts: all } : {};
}

/** The stored changes, each with the patch the plan made for its path. */
export function withPatches(stored: FileChange[], planned: readonly ReportedChange[]): ReportedChange[] {
  const patches = new Map(planned.flatMap((c) => (c.patch === undefined ? [] : [[c.path, c.patch] as const])));
  return stored.map((change) => {
    const patch = patches.get(change.path);
    return patch === undefined || change.action === "skip" ? change : { ...change, patch };
  });
}

function checkpointPayloadOf(event: StoredEvent): CheckpointPayload[] {
  return event.type === "session_checkpoint" ? [event.payload as CheckpointPayload] : [];
}
