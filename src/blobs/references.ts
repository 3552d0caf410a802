import type { CheckpointPayload, FileSnapshot, RewindPayload, StoredEvent } from "../core/events.js";
import { assertPayloadActedOn } from "../core/payload-check.js";

/**
 * The one answer to "which file snapshots does this event carry?": a checkpoint's
 * before-snapshots, or a rewind marker's undo snapshot. Every keep-set, the rewind plan and
 * `verify` go through it, so a new event type that holds blobs is taught here once. A payload that does
 * not fit its schema is STORE_TAMPERED, never "no snapshots": a prune must not take it for no reference.
 */
export function snapshotsIn(event: StoredEvent): readonly FileSnapshot[] {
  assertPayloadActedOn(event);
  if (event.type === "session_checkpoint") return (event.payload as CheckpointPayload).files ?? [];
  if (event.type === "session_rewind") return (event.payload as RewindPayload).undo?.files ?? [];
  return [];
}

/** Every blob the given events point at. A blob in this set must never be pruned. */
export function referencedBlobs(events: Iterable<StoredEvent>, into: Set<string> = new Set()): Set<string> {
  for (const event of events) addReferences(event, into);
  return into;
}

export function addReferences(event: StoredEvent, into: Set<string>): void {
  for (const file of snapshotsIn(event)) if (file.kind === "blob") into.add(file.blob);
}
