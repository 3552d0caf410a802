// A rewind intent no writer can act on (docs/ARCHITECTURE.md, "Rewind intent", repair): shown, finished when it
// fits the tape, or discarded when the person says so. Without this, every operation of the session fails with
// STORE_TAMPERED and the only way on is deleting a file by hand.
import type { SignalOption } from "../backend/types.js";
import { definedFields } from "../core/defined-fields.js";
import { isAgentTapeError } from "../core/errors.js";
import type { RewindPayload } from "../core/events.js";
import { checkIntent, readIntentRecord } from "../rewind/intent-check.js";
import { REWIND_INTENT_RECORD } from "../rewind/intent.js";
import { recoverInterruptedRewind } from "../rewind/roll-back.js";
import type { SessionStore } from "../session/session-store.js";

export interface RepairOptions extends SignalOption {
  /**
   * Drop an intent that cannot be acted on (malformed, or not fitting the tape). The session works again;
   * whatever files the interrupted rewind had changed stay as they are (it cannot be told what they were:
   * that is what the intent no longer says). An intent that fits is never discarded: it is finished.
   * @default false
   */
  discard?: boolean;
  /** How long to wait for the session's lock. @default the backend's default */
  lockWaitMs?: number;
}

/** What a rewind intent on disk says, as far as it can be read. */
export interface RepairIntent {
  kind?: string;
  /** The rewind's target (read from its marker), when the intent holds one. */
  targetSequence?: number;
  markerSequence?: number;
  workspace?: string;
  /** How many paths it changes. */
  files?: number;
  /** Its caller was told it failed (a writer rolls it back rather than finishing it). */
  failed?: string;
  /** Why no writer can act on it; undefined when it is well formed and fits the tape. */
  problem?: string;
}

export interface RepairReport {
  sessionId: string;
  /**
   * `none`: there was no intent. `finished` / `rolled-back`: it fitted the tape and was completed, or, one whose
   * caller saw it fail, rolled back, as the next writer would have. `kept`: it does not fit and was left (rerun
   * with `discard`). `discarded`: it did not fit and was dropped.
   */
  action: "none" | "finished" | "rolled-back" | "kept" | "discarded";
  intent?: RepairIntent;
}

/**
 * Looks at the session's rewind intent under the session's lock, taken straight from the backend: a store's
 * lock would first run recovery, which is what refuses the intent. Finishes a well-formed intent that fits the
 * tape (or rolls back one whose caller saw it fail); reports one that does not fit and keeps it, unless
 * `discard` is given. Never touches the workspace for an intent that does not fit. A store in this process that
 * holds the session's lock idle keeps it until its idle time passes: `lockWaitMs` waits that long.
 */
export async function repair(store: SessionStore<any>, id: string, options: RepairOptions = {}): Promise<RepairReport> {
  const backend = store.backend;
  const locked = await backend.lock(id, definedFields({ signal: options.signal, waitMs: options.lockWaitMs }));
  try {
    let found: unknown;
    let unreadable: string | undefined;
    try {
      found = await readIntentRecord(backend, id, options);
    } catch (error) {
      if (!isAgentTapeError(error, "STORE_TAMPERED")) throw error;
      found = null;
      unreadable = messageOf((error as Error).cause ?? error);
    }
    if (found === undefined) return { sessionId: id, action: "none" };
    const intent = describe(found);
    if (unreadable !== undefined) intent.problem = unreadable;
    else
      try {
        await checkIntent(backend, id, locked.lastSequence, found);
      } catch (error) {
        if (!isAgentTapeError(error, "STORE_TAMPERED")) throw error;
        intent.problem = (error as { what?: string }).what ?? messageOf(error);
      }
    if (intent.problem === undefined) {
      await recoverInterruptedRewind(backend, locked);
      const finished = locked.lastSequence === intent.markerSequence;
      return { sessionId: id, action: finished ? "finished" : "rolled-back", intent };
    }
    if (!options.discard) return { sessionId: id, action: "kept", intent };
    await locked.deleteRecord(REWIND_INTENT_RECORD);
    return { sessionId: id, action: "discarded", intent };
  } finally {
    await locked.release().catch(() => undefined);
  }
}

/** What can be read of an intent, field by field: each only when it has the type it should. */
function describe(found: unknown): RepairIntent {
  const record = typeof found === "object" && found !== null ? (found as Record<string, unknown>) : {};
  const described: RepairIntent = {};
  if (typeof record.kind === "string") described.kind = record.kind;
  if (Number.isSafeInteger(record.markerSequence)) described.markerSequence = record.markerSequence as number;
  if (typeof record.workspace === "string") described.workspace = record.workspace;
  if (Array.isArray(record.files)) described.files = record.files.length;
  const failed = record.failed as { reason?: unknown } | undefined;
  if (typeof failed?.reason === "string") described.failed = failed.reason;
  const marker = Array.isArray(record.append) ? (record.append.at(-1) as { payload?: unknown } | undefined) : undefined;
  const target = (marker?.payload as Partial<RewindPayload> | undefined)?.targetSequence;
  if (Number.isSafeInteger(target)) described.targetSequence = target as number;
  return described;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
