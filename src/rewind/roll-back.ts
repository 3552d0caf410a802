import type { LockedSession } from "../backend/types.js";
import { RewindFailedError } from "../core/errors.js";
import { readVerifiedBlob } from "../blobs/store-then-reference.js";
import type { SessionStore } from "../session/session-store.js";
import { applyFileRecords } from "./apply-files.js";
import { completeIntent, REWIND_INTENT_RECORD, type RewindIntent } from "./intent.js";
import type { FilePlan } from "./plan.js";

/**
 * A rewind is finished or rolled back, never left half done (docs/ARCHITECTURE.md, "Rewind intent").
 * Called when one of its steps threw, still under the lock:
 * - before the log was cut, it is rolled back: every changed path gets its before-state back (those bytes
 *   were stored before step 1), the intent goes, and REWIND_FAILED (`rolledBack: true`) says so;
 * - once the log is cut, the events after the target are gone from it, so it is finished instead;
 * - if neither works, the intent stays, the lock is given up (so the next operation, in this process or
 *   another, meets the intent at lock time) and REWIND_FAILED (`rolledBack: false`) says so.
 * Returns only when the rewind was finished after all.
 */
export async function settleFailedRewind(
  store: SessionStore<any>,
  locked: LockedSession,
  intent: RewindIntent,
  plan: FilePlan | undefined,
  cause: unknown,
): Promise<{ blobsPruned: number }> {
  const id = locked.sessionId;
  let stillPending = cause;
  try {
    const last = (await store.backend.lastEvent(id))?.sequence ?? 0;
    const logCut = last <= intent.truncateTo && intent.truncateTo < intent.markerSequence - 1;
    if (last < intent.markerSequence && !logCut) {
      if (intent.workspace !== undefined && plan && plan.changes.length > 0)
        await applyFileRecords(intent.workspace, plan.current.files, (hash) =>
          readVerifiedBlob(store.backend, id, hash),
        );
      // The before-state blobs stored for this are left to the next prune (or gc): deleting them here
      // could take one an earlier checkpoint also uses.
      await locked.deleteRecord(REWIND_INTENT_RECORD);
      throw new RewindFailedError(id, true, { cause });
    }
    return await completeIntent(store.backend, locked, intent);
  } catch (error) {
    if (error instanceof RewindFailedError) throw error;
    stillPending = error;
  }
  await locked.release().catch(() => undefined);
  throw new RewindFailedError(id, false, {
    cause,
    reason: `${messageOf(cause)}; then, putting it right: ${messageOf(stillPending)}`,
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
