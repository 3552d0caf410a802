import type { LockedSession } from "../backend/types.js";
import type { FileSnapshot, RewindPayload } from "../core/events.js";
import { RewindConflictError, type RewindConflict } from "../core/errors.js";
import { markBlobsInFlight } from "../blobs/in-flight.js";
import { fileStateOf } from "../checkpoint/after-state.js";
import { snapshotPaths } from "../checkpoint/snapshot.js";
import type { OnConflict } from "./conflicts.js";
import { isAtOrBelowAny } from "./plan.js";
import { plannedStates, type LateChange } from "./still-as-planned.js";
import { UNDO_LIMITS } from "./undo-limits.js";

/** The change a late conflict is reported with (`RewindConflict.change`). */
export const CHANGED_DURING_THE_REWIND = "changed during the rewind";

/** What {@link lateChangeHandler} needs of the intent it runs: its own fields, changed in place when it keeps one. */
interface Running {
  kind: "rewind" | "undo";
  workspace?: string;
  files: FileSnapshot[];
  append: { payload: unknown }[];
  before?: FileSnapshot[];
  onLateChange?: OnConflict;
  pruneCandidates?: string[];
  scratchBlobs?: number;
}

/**
 * What a rewind (or an undo) does about a path found changed just before its write, after the conflict check
 * (docs/ARCHITECTURE.md, "Conflicts"), as the intent's `onLateChange` says (`onConflict`, or "refuse" when only
 * confirmed conflicts may be overwritten; "skip" for intents written before it):
 * - "refuse" throws REWIND_CONFLICT: the operation is rolled back, and the roll-back leaves that path as it is;
 * - "skip" leaves it as it is (the change becomes a skip);
 * - "overwrite" keeps what is there now for the undo first: its bytes stored as blobs (durably), its records in
 *   the intent's before-state and the marker's undo snapshot in place of the plan's, the intent written again
 *   (durably: a crash from then on finishes with them, or rolls back to them). Then the path is looked at again
 *   and written. Content the undo cannot hold (too large, unreadable) is left as it is instead.
 * Each conflict goes into `found`, for the report. `write` writes the intent durably.
 */
export function lateChangeHandler(
  locked: LockedSession,
  intent: Running,
  write: () => Promise<void>,
  found: RewindConflict[],
): (change: LateChange) => Promise<"left" | Map<string, FileSnapshot[]>> {
  const policy = intent.onLateChange ?? "skip";
  let queue: Promise<unknown> = Promise.resolve(); // one intent write at a time
  return async (change) => {
    const conflict: RewindConflict = {
      path: change.path,
      change: CHANGED_DURING_THE_REWIND,
      expected: change.planned ? fileStateOf(change.planned) : { path: change.path, kind: "absent" },
      actual: change.actual,
      resolution: policy,
    };
    if (policy === "refuse") throw new RewindConflictError(locked.sessionId, [conflict]);
    const kept = policy === "overwrite" ? queue.then(() => keepForUndo(locked, intent, change.path, write)) : "left";
    queue = Promise.resolve(kept).catch(() => undefined);
    const outcome = await kept;
    noteConflict(found, { ...conflict, resolution: outcome === "left" ? "skip" : "overwrite" });
    return outcome;
  };
}

/**
 * Reads what is at `path` now (and below it), stores its bytes, puts its records in place of the plan's, and
 * writes the intent. Returns the planned states that now hold, or "left" when no copy of it can be kept.
 */
async function keepForUndo(
  locked: LockedSession,
  intent: Running,
  path: string,
  write: () => Promise<void>,
): Promise<"left" | Map<string, FileSnapshot[]>> {
  const now = await snapshotPaths(intent.workspace!, intent.workspace!, [path], UNDO_LIMITS);
  if (now.files.some((f) => f.kind === "skipped")) return "left";
  const marker = intent.append[intent.append.length - 1]!.payload as RewindPayload;
  await markBlobsInFlight(locked);
  for (const [hash, bytes] of now.blobs) {
    if (await locked.hasBlob(hash)) continue;
    await locked.writeBlob(hash, bytes, { durable: true });
    if (marker.undo === undefined && intent.kind === "rewind") {
      // keepUndo 0: kept only for a roll-back, so this rewind's own prune takes it again.
      intent.pruneCandidates = [...(intent.pruneCandidates ?? []), hash];
      intent.scratchBlobs = (intent.scratchBlobs ?? 0) + 1;
    }
  }
  const at = new Set([path]);
  const replace = (files: readonly FileSnapshot[]) => [
    ...files.filter((f) => !isAtOrBelowAny(f.path, at)),
    ...now.files,
  ];
  intent.before = replace(intent.before ?? []);
  if (marker.undo) marker.undo.files = replace(marker.undo.files);
  await write();
  return plannedStates(intent.before, intent.files);
}

/** One conflict per path in the report: a path looked at again and found changed again is reported once. */
function noteConflict(found: RewindConflict[], conflict: RewindConflict): void {
  const at = found.findIndex((c) => c.path === conflict.path);
  if (at === -1) found.push(conflict);
  else found[at] = conflict;
}
