import type { LockedSession, SignalOption, StorageBackend } from "../backend/types.js";
import { RewindFailedError, isAgentTapeError } from "../core/errors.js";
import { readVerifiedBlob } from "../blobs/store-then-reference.js";
import { recordedSizes } from "./recorded-sizes.js";
import { registerRecoveryStep, type PendingRewind } from "../session/recovery.js";
import { applyFileRecords } from "./apply-files.js";
import { plannedStates } from "./still-as-planned.js";
import { checkIntent, readIntentRecord } from "./intent-check.js";
import { completeIntent, operationOf, REWIND_INTENT_RECORD, type IntentDone, type RewindIntent } from "./intent.js";
import { undoBlobsOf } from "./undo-in-intent.js";
import { withWorkspaceLock } from "./workspace-lock.js";

// A rewind (or an undo) that did not finish (docs/ARCHITECTURE.md, "Rewind intent" and "Recovery"): its own
// caller's failure, the next writer's recovery, and what readers report meanwhile.

/**
 * A rewind is finished or rolled back, never left half done. Called when one of its steps threw, still under
 * the lock:
 * - while the log is untouched, it is rolled back: every changed path gets its before-state back (those bytes
 *   were stored before step 1), the intent goes, and REWIND_FAILED (`rolledBack: true`) says so;
 * - once the log is cut, the events after the target are gone from it, so it is finished instead;
 * - if neither works, the intent stays, the lock is given up and REWIND_FAILED (`rolledBack: false`) says so.
 *   An intent the caller saw fail this way is marked `failed`, so that no later writer finishes it behind
 *   the caller's back: the next one rolls it back once the cause is fixed.
 * Returns only when the rewind was finished after all.
 */
export async function settleFailedRewind(
  backend: StorageBackend,
  locked: LockedSession,
  intent: RewindIntent,
  cause: unknown,
): Promise<IntentDone> {
  const id = locked.sessionId;
  let stillPending: unknown;
  try {
    if (await canRollBack(locked, intent)) {
      await rollBack(backend, locked, intent);
      // A path found changed just before its write, refused (late-change.ts): the conflict, nothing changed.
      if (isAgentTapeError(cause, "REWIND_CONFLICT")) throw cause;
      throw new RewindFailedError(id, true, { cause });
    }
    return await completeIntent(backend, locked, intent);
  } catch (error) {
    if (isAgentTapeError(error, "REWIND_FAILED") && error.rolledBack) throw error;
    if (error === cause && isAgentTapeError(error, "REWIND_CONFLICT")) throw error;
    stillPending = error;
  }
  let reason = `${messageOf(cause)}; then, putting it right: ${messageOf(stillPending)}`;
  if (await canRollBack(locked, intent).catch(() => false)) reason = await markFailed(locked, intent, reason);
  await locked.release().catch(() => undefined);
  throw new RewindFailedError(id, false, { cause, reason });
}

/**
 * Recovery, at every lock acquisition (so: writers only). A rewind whose caller saw it fail (`failed`) is
 * rolled back, never finished. One a crash interrupted (the caller never got an answer) is finished; if that
 * fails it is rolled back while it still can be. Either way, one that can be neither stays, marked `failed`
 * where the log is untouched, and the writer gets REWIND_FAILED (`rolledBack: false`) with the OS error as
 * cause, never the restore's bare error.
 */
export async function recoverInterruptedRewind(backend: StorageBackend, locked: LockedSession): Promise<void> {
  const found = await readIntentRecord(backend, locked.sessionId);
  if (found === undefined) return;
  // Anyone who can write the session folder could have put it there: act on it only if it fits the tape.
  await checkIntent(backend, locked.sessionId, locked.lastSequence, found);
  const intent = found as RewindIntent;
  // Finishing or rolling back writes the workspace: as a rewind does, under its lock ("Workspace lock").
  if (intent.workspace !== undefined && (intent.files.length > 0 || (intent.before?.length ?? 0) > 0))
    return withWorkspaceLock(intent.workspace, () => settleInterrupted(backend, locked, intent));
  return settleInterrupted(backend, locked, intent);
}

async function settleInterrupted(backend: StorageBackend, locked: LockedSession, intent: RewindIntent) {
  if (intent.failed !== undefined && !(await canRollBack(locked, intent)))
    // Marked only while it could be rolled back: its before-state blobs were removed by hand since. Finishing
    // it would apply what its caller saw fail, so it is left to a person.
    throw new RewindFailedError(locked.sessionId, false, {
      reason:
        `${intent.failed.reason}; it cannot be rolled back any more (blobs of its before-state are gone): ` +
        "put the files back by hand, then delete records/rewind-intent.json",
    });
  if (intent.failed === undefined) {
    try {
      await completeIntent(backend, locked, intent);
      return;
    } catch (error) {
      if (!(await canRollBack(locked, intent).catch(() => false))) throw asPending(locked.sessionId, error);
      intent.failed = { reason: `interrupted, then finishing it failed: ${messageOf(error)}` };
    }
  }
  try {
    await rollBack(backend, locked, intent);
  } catch (error) {
    const reason = `${intent.failed!.reason}; rolling it back failed: ${messageOf(error)}`;
    throw asPending(locked.sessionId, error, await markFailed(locked, intent, intent.failed!.reason, reason));
  }
}

/**
 * What a reader reports while an intent is on disk: never a lock taken, never a file or the log changed
 * (docs/ARCHITECTURE.md, "Recovery"). An intent that does not fit the tape is STORE_TAMPERED, as for writers.
 * The check reads the log, which a rewind running in another process may cut meanwhile: a misfit is believed
 * only if the intent and the log's end were the same before and after it.
 */
export async function pendingRewindForReaders(
  backend: StorageBackend,
  sessionId: string,
  options: SignalOption,
): Promise<PendingRewind | undefined> {
  for (let attempt = 1; ; attempt++) {
    const found = await readIntentRecord(backend, sessionId, options);
    if (found === undefined) return undefined;
    const last = (await backend.lastEvent(sessionId, options))?.sequence ?? 0;
    try {
      await checkIntent(backend, sessionId, last, found);
    } catch (error) {
      if (!isAgentTapeError(error, "STORE_TAMPERED") || attempt >= 5) throw error;
      const again = await readIntentRecord(backend, sessionId, options).catch(() => undefined);
      const lastAgain = (await backend.lastEvent(sessionId, options))?.sequence ?? 0;
      if (lastAgain === last && JSON.stringify(again) === JSON.stringify(found)) throw error;
      continue; // it moved on while we looked: look again
    }
    const intent = found as RewindIntent;
    if (intent.failed) return { state: "failed", reason: intent.failed.reason };
    const what = intent.kind === "undo" ? "an undo" : "a rewind";
    return { state: "interrupted", reason: `${what} running in another process, or interrupted by a crash` };
  }
}

/**
 * True while the operation can still be undone: nothing of the log changed yet (a rewind's log neither cut
 * nor marked, an undo's events not appended) and the intent holds the before-state, whose blobs are all
 * there (a rewind with keepUndo 0 prunes them in step 3; intents written before `before` existed hold none).
 */
async function canRollBack(locked: LockedSession, intent: RewindIntent): Promise<boolean> {
  if (intent.before === undefined) return false;
  const untouched = intent.kind === "undo" ? intent.truncateTo : intent.markerSequence - 1;
  if (locked.lastSequence !== untouched) return false;
  const carried = new Set((intent.undoBlobs ?? []).map((b) => b.hash)); // its bytes are in the intent itself
  for (const record of intent.before)
    if (record.kind === "blob" && !carried.has(record.blob) && !(await locked.hasBlob(record.blob))) return false;
  return true;
}

/**
 * Puts every path the operation changes back as it was before it, then drops the intent. The before-state
 * blobs stay for the next prune (or gc): deleting them here could take one an earlier checkpoint also uses.
 */
async function rollBack(backend: StorageBackend, locked: LockedSession, intent: RewindIntent): Promise<void> {
  // A few before-blobs ride in the intent (undo-in-intent.ts), and may not be stored yet: their bytes come from it.
  const carried = undoBlobsOf(locked.sessionId, intent.undoBlobs ?? []);
  const sizes = recordedSizes(intent.before ?? []);
  if (intent.workspace !== undefined && intent.before!.length > 0)
    // A path changed since the plan looked (neither as it was nor as the rewind made it) is left as it is.
    await applyFileRecords(
      intent.workspace,
      intent.before!,
      async (hash) =>
        carried.get(hash) ?? readVerifiedBlob(backend, locked.sessionId, hash, { bytes: sizes.get(hash) }),
      {
        operation: operationOf(locked.sessionId, intent, "roll-back"),
        planned: plannedStates(intent.before!, intent.files),
      },
    );
  // A copy of the part the log was to lose may be there already (step "log-archived"): nothing names it now.
  if (intent.archive?.copyAfter !== undefined) await locked.deleteRecord(intent.archive.name, { archivedLog: true });
  await locked.deleteRecord(REWIND_INTENT_RECORD);
}

/**
 * Marks the intent `failed` (durably), so that no writer finishes it later. Returns the reason to give; if even
 * the mark cannot be written, says so: the intent then stays as a crash leaves it, and the next writer finishes it.
 */
async function markFailed(locked: LockedSession, intent: RewindIntent, reason: string, told = reason) {
  try {
    await locked.writeRecord(REWIND_INTENT_RECORD, { ...intent, failed: { reason } });
    return told;
  } catch (error) {
    return `${told}; marking it failed failed too (${messageOf(error)}), so the next writer will finish it`;
  }
}

/** The error a writer gets for a rewind left pending: REWIND_FAILED with the cause, or the library's own error. */
function asPending(sessionId: string, error: unknown, reason?: string): unknown {
  if (reason === undefined && isAgentTapeError(error)) return error;
  if (isAgentTapeError(error, "STORE_TAMPERED") || isAgentTapeError(error, "LOCK_COMPROMISED")) return error;
  return new RewindFailedError(sessionId, false, { cause: error, ...(reason !== undefined && { reason }) });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// Every entry point that can write an intent (rewind, undo) imports this module, and so does the public entry
// (through them): any store that can meet an intent has this step registered.
registerRecoveryStep({
  record: REWIND_INTENT_RECORD,
  run: recoverInterruptedRewind,
  pendingForReaders: pendingRewindForReaders,
});
