// The retention horizon: the checkpoints retention dropped (docs/ARCHITECTURE.md, "Retention").
import type { LockedSession, SignalOption, StorageBackend } from "../backend/types.js";
import { StoreTamperedError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";

/**
 * The side record naming the horizon. A record, not an event: a rewind truncates the log, and a
 * horizon cut off with it would make the dropped checkpoints look whole again.
 */
export const HORIZON_RECORD = "retention-horizon";

export interface RetentionHorizon {
  v: 1;
  /** Every `session_checkpoint` with a sequence at or below this no longer keeps its blobs alive. */
  throughSequence: number;
  /** When it last moved. */
  droppedAt: string;
}

/** The session's horizon: 0 when retention never dropped a checkpoint. A malformed record is STORE_TAMPERED. */
export async function readHorizon(backend: StorageBackend, id: string, options: SignalOption = {}): Promise<number> {
  const record = (await backend.readRecord(id, HORIZON_RECORD, options)) as Partial<RetentionHorizon> | undefined;
  if (record === undefined) return 0;
  const through = record?.throughSequence;
  if (record?.v !== 1 || typeof through !== "number" || !Number.isSafeInteger(through) || through < 0)
    throw new StoreTamperedError(id, `records/${HORIZON_RECORD}.json is not a retention horizon`);
  return through;
}

/** Moves the horizon forward (never back), durably, before any blob it frees is deleted. */
export async function raiseHorizon(locked: LockedSession, current: number, through: number): Promise<void> {
  if (through <= current) return;
  const record: RetentionHorizon = { v: 1, throughSequence: through, droppedAt: new Date().toISOString() };
  await locked.writeRecord(HORIZON_RECORD, record);
}

/** Whether retention dropped this event's snapshots: a checkpoint at or below the horizon. */
export function isDroppedCheckpoint(event: StoredEvent, horizon: number): boolean {
  return event.type === "session_checkpoint" && event.sequence <= horizon;
}
