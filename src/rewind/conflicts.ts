import { RewindConflictError, type RewindConflict } from "../core/errors.js";
import type { CheckpointPayload, FileState, FileStatesPayload, RewindPayload, StoredEvent } from "../core/events.js";
import { fileStateOf } from "../checkpoint/after-state.js";
import { assertPayloadActedOn } from "../core/payload-check.js";
import { yieldIfLong } from "../core/time-slices.js";
import { isAtOrBelowAny, type FilePlan } from "./plan.js";

/** A conflict as a dry run reported it and a person agreed to overwrite: its path and the state it had then. */
export type ConfirmedConflict = Pick<RewindConflict, "path" | "actual">;

/** What a rewind does about a path changed outside the session: see {@link RewindConflict}. */
export type OnConflict = "refuse" | "skip" | "overwrite";
export const ON_CONFLICT: readonly OnConflict[] = ["refuse", "skip", "overwrite"];

/**
 * The last state the tape records agent-tape leaving each path in, per workspace, folded over the
 * tape in order (docs/ARCHITECTURE.md, "Conflicts"): a tool's after-state sets it; a checkpoint makes
 * it unknown (a tool is about to write, and only its after-state says what it left); a rewind marker
 * sets what the rewind wrote. A path the tape never recorded is not in the map at all.
 */
export class LastWritten {
  private readonly workspaces = new Map<string, WorkspaceStates>();

  add(event: StoredEvent): void {
    if (event.type === "session_file_states") {
      const payload = event.payload as FileStatesPayload;
      const states = this.in(payload.workspace);
      for (const state of payload.files) states.set(state.path, state);
    } else if (event.type === "session_checkpoint") {
      const payload = event.payload as CheckpointPayload;
      const states = this.in(payload.workspace);
      for (const file of payload.files) states.set(file.path, null);
    } else if (event.type === "session_rewind") {
      const marker = event.payload as RewindPayload;
      const workspace = marker.wrote?.workspace ?? marker.undo?.workspace;
      if (!workspace) return;
      const states = this.in(workspace);
      const wrote = new Map((marker.wrote?.files ?? []).map((state) => [state.path, state]));
      for (const change of marker.changes) {
        if (change.action === "skip") {
          // Left alone, what was known still holds; but not one left as a "files" rewind made with keepUndo 0 made
          // it (undo_not_kept): a rewind "all" cuts that rewind's marker, the one record of it, so it is unknown.
          if (change.reason === "undo_not_kept") states.set(change.path, null);
          continue;
        }
        states.set(change.path, wrote.get(change.path) ?? null);
      }
      leftInCompleteFolders(marker, wrote, states);
    }
  }

  /** The states recorded for one workspace (by its real path). */
  in(workspace: string): WorkspaceStates {
    let states = this.workspaces.get(workspace);
    if (!states) this.workspaces.set(workspace, (states = new WorkspaceStates()));
    return states;
  }
}

/**
 * A folder a rewind wrote as a complete listing holds what the rewind wrote in it and what it left as it was (a
 * folder whose mode alone was put back: none of its files). The marker names only the first; the second is in its
 * undo snapshot (the state before the rewind, which the rewind did not change), and is recorded from there, so the
 * check does not take those files for ones made since by someone else. Without an undo snapshot (`keepUndo: 0`)
 * what the folder holds is not known: it is recorded as not complete (docs/ARCHITECTURE.md, "Conflicts").
 */
function leftInCompleteFolders(
  marker: RewindPayload,
  wrote: ReadonlyMap<string, FileState>,
  states: WorkspaceStates,
): void {
  const complete = [...wrote.values()].filter(
    (state): state is Extract<FileState, { kind: "directory" }> =>
      state.kind === "directory" && state.complete !== false,
  );
  if (complete.length === 0) return;
  if (marker.undo === undefined) {
    for (const folder of complete) states.set(folder.path, { ...folder, complete: false });
    return;
  }
  const named = new Set(marker.changes.map((change) => change.path));
  for (const record of marker.undo.files) {
    if (named.has(record.path)) continue;
    // The nearest path above it the rewind acted on decides: a complete folder it wrote keeps it; anything else
    // (a folder skipped, made a file or removed) says nothing of it here.
    for (let above = parentOf(record.path); above !== undefined; above = parentOf(above)) {
      if (!named.has(above)) continue;
      const folder = wrote.get(above);
      if (folder?.kind === "directory" && folder.complete !== false) states.set(record.path, fileStateOf(record));
      break;
    }
  }
}

/**
 * What the tape last recorded leaving each of `paths` in, reading as little of it as it can: the events it
 * ends with (`tail`, read already) decide every path they name, exactly as the whole tape would (a later event
 * overrides an earlier one, and what a tail event marks below a folder it also named). Only when some path is
 * not named there is the whole tape folded, from `before` (the events ahead of the tail) on. So a rewind whose
 * cut names every path it changes costs what it cuts (docs/ARCHITECTURE.md, "Conflicts").
 */
export async function lastWrittenStates(
  before: () => AsyncIterable<StoredEvent>,
  tail: readonly StoredEvent[],
  workspace: string,
  paths: Iterable<string>,
): Promise<WorkspaceStates> {
  const fromTail = new LastWritten();
  for (const event of tail) fromTail.add(event);
  const states = fromTail.in(workspace);
  const unnamed = [...paths].some((path) => states.get(path) === undefined);
  if (!unnamed) return states;
  const whole = new LastWritten();
  for await (const event of before()) {
    await yieldIfLong();
    assertPayloadActedOn(event);
    whole.add(event);
  }
  for (const event of tail) whole.add(event);
  return whole.in(workspace);
}

export class WorkspaceStates {
  /** `null`: the tape saw the path, but does not know what it was left as. */
  private readonly states = new Map<string, FileState | null>();
  /** Paths with a recorded path below them: only those need their descendants updated. */
  private readonly parents = new Set<string>();

  /** The recorded state; null when seen but unknown; undefined when the tape never recorded the path. */
  get(path: string): FileState | null | undefined {
    return this.states.get(path);
  }

  set(path: string, state: FileState | null): void {
    // Whatever lay below a path that is now not a folder is gone with it. Below a link, a name is a second name of
    // what the link leads to, which the tape records by its own name: what it recorded by that name is forgotten.
    if (state !== null && state.kind !== "directory" && state.kind !== "unknown" && this.parents.has(path)) {
      const prefix = path === "." ? "" : `${path}/`;
      for (const below of [...this.states.keys()])
        if (below.startsWith(prefix) && below !== path) {
          if (state.kind === "symlink") this.states.delete(below);
          else this.states.set(below, { path: below, kind: "absent" });
        }
    }
    this.states.set(path, state === null || state.kind === "unknown" ? null : state);
    for (let slash = path.lastIndexOf("/"); slash > 0; slash = path.lastIndexOf("/", slash - 1))
      this.parents.add(path.slice(0, slash));
    if (path !== ".") this.parents.add(".");
  }
}

/**
 * Compares every path the plan would change (and whatever lies below it) with what the tape last
 * recorded leaving it as; a difference is a conflict. Then applies `onConflict`: "refuse" throws
 * REWIND_CONFLICT (unless `dryRun`, which reports them), "skip" turns the conflicting changes into
 * skips (and a deletion of a folder above one), "overwrite" keeps the plan, whose undo snapshot
 * holds the conflicting bytes. Paths the tape holds no after-state for are not checked.
 */
export function settleConflicts(
  sessionId: string,
  plan: FilePlan,
  written: WorkspaceStates,
  onConflict: OnConflict,
  dryRun: boolean,
  overwriteOnly?: readonly ConfirmedConflict[],
): RewindConflict[] {
  const conflicts = findConflicts(plan, written, onConflict);
  if (conflicts.length === 0) return conflicts;
  if (onConflict === "refuse" && !dryRun) throw new RewindConflictError(sessionId, conflicts);
  if (onConflict === "overwrite" && overwriteOnly && !dryRun) {
    // Only what the caller was shown, as it was shown: anything else is an edit nobody agreed to lose.
    const unconfirmed = conflicts.filter(
      (c) => !overwriteOnly.some((shown) => shown.path === c.path && shownAsItIs(shown.actual, c.actual)),
    );
    if (unconfirmed.length > 0)
      throw new RewindConflictError(
        sessionId,
        unconfirmed.map((c) => ({ ...c, resolution: "refuse" })),
      );
  }
  if (onConflict === "skip") skipConflicting(plan, conflicts);
  return conflicts;
}

function findConflicts(plan: FilePlan, written: WorkspaceStates, resolution: OnConflict): RewindConflict[] {
  const conflicts: RewindConflict[] = [];
  for (const record of plan.current.files) {
    const actual = fileStateOf(record);
    let expected = written.get(record.path);
    if (expected === undefined && actual.kind !== "absent") {
      // Never recorded, yet inside a folder whose every entry was: made since, by someone else. Whether the plan
      // would change it (a file it deletes because the listing it puts back does not name it) or not.
      const parent = parentOf(record.path);
      const folder = parent === undefined ? undefined : written.get(parent);
      if (folder?.kind === "directory" && folder.complete !== false) expected = { path: record.path, kind: "absent" };
    }
    if (!expected || sameState(expected, actual)) continue;
    conflicts.push({ path: record.path, change: describeChange(expected, actual), expected, actual, resolution });
  }
  return conflicts.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Leaves each conflicting path as it is: its own change, and any change above it that would remove it. */
function skipConflicting(plan: FilePlan, conflicts: readonly RewindConflict[]): void {
  const reasons = new Map<string, string>();
  for (const conflict of conflicts) {
    reasons.set(conflict.path, `conflict: ${conflict.change} since agent-tape wrote it`);
    for (let above = parentOf(conflict.path); above !== undefined; above = parentOf(above))
      if (!reasons.has(above)) reasons.set(above, `conflict below: ${conflict.path} ${conflict.change}`);
  }
  const stillChanging = new Set<string>();
  plan.changes = plan.changes.map((change) => {
    const reason = reasons.get(change.path);
    // A folder that is restored stays a folder and keeps what is inside it: only removing it is unsafe.
    const removesConflict = change.becomes && change.becomes.kind !== "directory";
    const isConflict = conflicts.some((c) => c.path === change.path);
    if (reason !== undefined && change.becomes && (isConflict || removesConflict))
      return { path: change.path, action: "skip", reason };
    if (change.becomes) stillChanging.add(change.path);
    return change;
  });
  // The undo snapshot keeps only what still changes.
  const files = plan.current.files.filter((f) => isAtOrBelowAny(f.path, stillChanging));
  const blobs = new Map(
    [...plan.current.blobs].filter(([hash]) => files.some((f) => f.kind === "blob" && f.blob === hash)),
  );
  plan.current = { files, blobs };
}

/** The state a rewind leaves each path it changes in, for its marker. */
export function statesWrittenBy(plan: FilePlan): FileState[] {
  return plan.changes.flatMap((change) => (change.becomes ? [fileStateOf(change.becomes)] : []));
}

function parentOf(path: string): string | undefined {
  if (path === ".") return undefined;
  const slash = path.lastIndexOf("/");
  return slash === -1 ? "." : path.slice(0, slash);
}

/**
 * A conflict the caller was shown still stands as shown. A state that could not be read (too large to hash, say)
 * matches the same reason: it was shown as "cannot be compared", and that is what the caller agreed to.
 */
function shownAsItIs(shown: FileState, now: FileState): boolean {
  if (shown.kind === "unknown") return now.kind === "unknown" && now.reason === shown.reason;
  return sameState(shown, now);
}

function sameState(a: FileState, b: FileState): boolean {
  switch (a.kind) {
    case "absent":
      return b.kind === "absent";
    case "file":
      return b.kind === "file" && a.sha256 === b.sha256 && a.mode === b.mode;
    case "symlink":
      return b.kind === "symlink" && a.target === b.target;
    case "directory":
      return b.kind === "directory" && a.mode === b.mode;
    default:
      return false;
  }
}

function describeChange(expected: FileState, actual: FileState): string {
  if (actual.kind === "unknown") return `cannot be compared now (${actual.reason})`;
  if (expected.kind === "absent") return "created";
  if (actual.kind === "absent") return "deleted";
  if (expected.kind !== actual.kind) return `replaced by a ${actual.kind}`;
  if (expected.kind === "file" && actual.kind === "file" && expected.sha256 === actual.sha256) return "mode changed";
  if (expected.kind === "directory") return "mode changed";
  return "modified";
}
