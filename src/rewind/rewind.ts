import { resolve } from "node:path";
import { assertPayloadActedOn } from "../core/payload-check.js";
import type { LockedSession, SignalOption } from "../backend/types.js";
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
  type IgnoredChanges,
  type RewindPayload,
  type StoredEvent,
} from "../core/events.js";
import { eventFor, withLockedSession, type SessionStore } from "../session/session-store.js";
import { UNDO_LIMITS } from "./undo-limits.js";
import { archiveName, archivedEvents, listArchives, readArchive } from "../blobs/archives.js";
import { addReferences } from "../blobs/references.js";
import { isDroppedCheckpoint, readHorizonMark } from "../blobs/retention-horizon.js";
import { completeIntent, writeIntent, type IntentDone, type RewindIntent, type RewindStep } from "./intent.js";
import { settleFailedRewind } from "./roll-back.js";
import { carriesUndo, writeIntentWithUndo } from "./undo-in-intent.js";
import { realWorkspaceOf } from "../checkpoint/confine.js";
import { recordedWorkspace } from "./recorded-workspace.js";
import { hardLinksSplit } from "./hard-link-splits.js";
import { ignoredChangesIn } from "../checkpoint/workspace-index/ignored-changes.js";
import { closestSnapshotPerPath, planFileChanges, type FilePlan } from "./plan.js";
import { diffPlannedChanges } from "./plan-diffs.js";
import { totalDiffs, type DiffTotals } from "../core/file-diff.js";
import { lockWorkspace, type WorkspaceLock } from "./workspace-lock.js";
import { assertExpectedHead, assertExpectedHeadForm } from "./expected-head.js";
import { assertTargetRead, checkTargetForm, resolveTarget } from "./target.js";
import {
  lastWrittenStates,
  ON_CONFLICT,
  settleConflicts,
  statesWrittenBy,
  type ConfirmedConflict,
  type OnConflict,
} from "./conflicts.js";
import { signalOf } from "../core/defined-fields.js";

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
  const record = await store.backend.getSession(id, signalOf(options));
  if (!record) throw new SessionNotFoundError(id);
  const touchesFiles = mode.data !== "conversation";
  const givenWorkspace = options.workspace ?? record.workspace;
  if (touchesFiles && givenWorkspace === undefined)
    throw new InvalidArgumentError(
      `Session "${id}" has no workspace: pass \`workspace\`, or rewind with mode "conversation".`,
    );

  return withLockedSession(
    store,
    id,
    async (locked) => {
      // Held from the conflict check to the last write (docs/ARCHITECTURE.md, "Workspace lock").
      let workspaceLock: WorkspaceLock | undefined;
      try {
        const last = locked.lastSequence;
        assertExpectedHead(id, options.expectedLastSequence, last);
        const target = await resolveTarget(store.backend, id, options, last, {
          ...signalOf(options),
          callerReadsFromTarget: true,
        });
        const report = emptyReport(target, last, mode.data, options.dryRun ?? false);
        if (target === last) return report;

        // Only the events after the target are read here; what the tape last wrote to each path (the conflicts)
        // is decided by them when they name every path the plan changes, else by the whole tape (conflicts.ts).
        // The cut events are held only for what needs them (the file plan, the archive for undo); otherwise
        // counted and their blobs noted as they stream by, so a cut of any length costs no memory.
        // A backend that can copy a byte range keeps the cut part that way for undo (see prepareRewind).
        const byteRange = locked.archiveLogAfter !== undefined && store.backend.readArchivedLog !== undefined;
        const keepAfter = touchesFiles || (keepUndo > 0 && !(options.dryRun ?? false) && !byteRange);
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
        if (mode.data !== "files") report.eventsRemoved = cut.events;
        // A checkpoint retention dropped cannot put its files back: refuse rather than restore some paths only.
        if (touchesFiles) {
          const horizon = await readHorizonMark(store.backend, id, signalOf(options));
          if (after.some((event) => isDroppedCheckpoint(event, horizon)))
            throw new BeyondRetentionHorizonError(id, target, horizon.through);
        }

        let plan: FilePlan | undefined;
        let realWorkspace: string | undefined;
        if (touchesFiles) {
          // Named by the caller: trusted. Taken from session.json: only if the tape recorded the same folder.
          const workspace = options.workspace ?? (await recordedWorkspace(id, after, givenWorkspace!));
          realWorkspace = await realWorkspaceOf(workspace);
          if (!report.dryRun) workspaceLock = await lockWorkspace(realWorkspace, signalOf(options));
          const limits = { ...UNDO_LIMITS, maxFileBytes: options.maxFileBytes ?? UNDO_LIMITS.maxFileBytes };
          plan = await planFileChanges(
            store.backend,
            id,
            realWorkspace,
            resolve(workspace),
            closestSnapshotPerPath(after),
            limits,
          );
          const written = await lastWrittenStates(
            () => store.backend.readEvents(id, { toSequence: target, ...signalOf(options) }),
            after,
            realWorkspace,
            plan.current.files.map((record) => record.path),
          );
          const conflicts = settleConflicts(id, plan, written, onConflict, report.dryRun, options.overwriteOnly);
          if (conflicts.length > 0) report.conflicts = conflicts;
          await diffPlannedChanges(plan, realWorkspace, { patches: options.diffs ?? false });
          Object.assign(report, summarizePlan(plan));
          const ignoredChanges = ignoredChangesIn(after.flatMap(checkpointPayloadOf));
          if (ignoredChanges !== undefined) report.ignoredChanges = ignoredChanges;
          const split = await hardLinksSplit(realWorkspace, plan.changes);
          if (split.length > 0) report.hardLinksSplit = split;
        }
        options.onProgress?.("planned");
        if (report.dryRun) return report;
        if (report.unrecoverable && keepUndo > 0 && options.allowUnrecoverable !== true)
          throw new UnrecoverableChangeError(id, report.unrecoverable);

        const markerSequence = last + 1;
        const intent = await prepareRewind(store, locked, {
          report,
          plan,
          realWorkspace,
          after,
          cutBlobs: cut.blobs,
          markerSequence,
          keepUndo,
          byteRange,
          // a late conflict is one nobody was shown: overwritten only where the caller agreed to any
          onLateChange: onConflict === "overwrite" && options.overwriteOnly ? "refuse" : onConflict,
        });
        let done: IntentDone;
        try {
          options.onProgress?.("intent-written");
          workspaceLock?.assertHeld();
          done = await completeIntent(store.backend, locked, intent, options.onProgress, plan?.blobs);
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
      } finally {
        await workspaceLock?.release();
      }
    },
    { ...signalOf(options), detectReentry: false }, // runs no user code while locked
  );
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
  const marker = eventFor(store, locked.sessionId, { type: "session_rewind", payload });
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
  await writeIntentWithUndo(locked, beforeState, intent, UNDO_LIMITS.concurrency, () => writeIntent(locked, intent));
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
