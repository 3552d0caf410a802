import type { SessionRecord } from "../backend/types.js";
import type { StoredEvent } from "../core/events.js";
import type { SessionInfo } from "./store-options.js";

/** What a session is, from its creation record and its last event (none: an empty log). */
export function toInfo(record: SessionRecord, last: StoredEvent | undefined): SessionInfo {
  const info: SessionInfo = {
    id: record.id,
    createdAt: record.createdAt,
    updatedAt: last?.createdAt ?? record.createdAt,
    lastSequence: last?.sequence ?? 0,
  };
  if (record.title !== undefined) info.title = record.title;
  if (record.workspace !== undefined) info.workspace = record.workspace;
  if (record.parent !== undefined) info.parent = record.parent;
  return info;
}
