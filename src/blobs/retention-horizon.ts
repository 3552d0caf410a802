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
  /**
   * Every `session_checkpoint` and `session_rewind` (its undo snapshot) with a sequence at or below this no longer
   * keeps its blobs alive.
   */
  throughSequence: number;
  /**
   * The greatest event id among the checkpoints dropped: a checkpoint whose own id is at or below it was
   * dropped too, wherever it stands now. An undo of a conversation rewind puts events back under new
   * sequences above `throughSequence`, keeping their ids. Absent on records written before it.
   */
  throughId?: string;
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

/** The horizon as the checkpoints themselves are judged by: its sequence and, when recorded, its id. */
export interface HorizonMark {
  through: number;
  throughId?: string;
}

/** {@link readHorizon}, with the id: what {@link isDroppedCheckpoint} needs. */
export async function readHorizonMark(
  backend: StorageBackend,
  id: string,
  options: SignalOption = {},
): Promise<HorizonMark> {
  const through = await readHorizon(backend, id, options);
  if (through === 0) return { through };
  const record = (await backend.readRecord(id, HORIZON_RECORD, options)) as Partial<RetentionHorizon> | undefined;
  const throughId = record?.throughId;
  if (throughId !== undefined && (typeof throughId !== "string" || !/^[0-9A-Z]{26}$/.test(throughId)))
    throw new StoreTamperedError(id, `records/${HORIZON_RECORD}.json names no event id`);
  return throughId === undefined ? { through } : { through, throughId };
}

/** The later of two horizons, field by field: what a prune told of a horizon not yet written must honour. */
export function laterHorizon(a: HorizonMark, b: number | HorizonMark | undefined): HorizonMark {
  const other = typeof b === "number" ? { through: b } : (b ?? { through: 0 });
  const ids = [a.throughId, other.throughId].filter((id): id is string => id !== undefined).sort();
  const through = Math.max(a.through, other.through);
  return ids.length > 0 ? { through, throughId: ids.at(-1)! } : { through };
}

/** Moves the horizon forward (never back), durably, before any blob it frees is deleted. */
export async function raiseHorizon(
  locked: LockedSession,
  current: number | HorizonMark,
  through: number,
  throughId?: string,
): Promise<void> {
  const was = typeof current === "number" ? { through: current } : current;
  const next = laterHorizon(was, throughId === undefined ? through : { through, throughId });
  if (next.through === was.through && next.throughId === was.throughId) return;
  const record: RetentionHorizon = { v: 1, throughSequence: next.through, droppedAt: new Date().toISOString() };
  if (next.throughId !== undefined) record.throughId = next.throughId;
  await locked.writeRecord(HORIZON_RECORD, record);
}

/**
 * Whether retention dropped this event's snapshots: a checkpoint at or below the horizon's sequence, or, by its
 * own id, one retention dropped that an undo has since put back under a newer sequence (ids sort by creation:
 * src/core/ids.ts). A checkpoint made later on a machine whose clock lies before the dropped ones counts as
 * dropped too: a rewind that needs it is refused (BEYOND_RETENTION_HORIZON), never done in part.
 */
export function isDroppedCheckpoint(event: StoredEvent, horizon: number | HorizonMark): boolean {
  // A rewind's (or an undo's) marker holds a snapshot too, its undo snapshot: retention drops it as a checkpoint.
  if (event.type !== "session_checkpoint" && event.type !== "session_rewind") return false;
  if (typeof horizon === "number") return event.sequence <= horizon;
  return (
    event.sequence <= horizon.through ||
    (horizon.throughId !== undefined && typeof event.id === "string" && event.id <= horizon.throughId)
  );
}
