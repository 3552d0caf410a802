import type { StoredEvent } from "./events.js";
import type { CheckpointPayload, RewindPayload } from "./events.js";

/**
 * Every blob the given events point at: the before-snapshots of checkpoints and the undo
 * snapshots of rewind markers. A blob in this set must never be pruned.
 */
export function referencedBlobs(events: Iterable<StoredEvent>, into: Set<string> = new Set()): Set<string> {
  for (const event of events) addReferences(event, into);
  return into;
}

export function addReferences(event: StoredEvent, into: Set<string>): void {
  if (event.type === "session_checkpoint") {
    for (const file of (event.payload as CheckpointPayload).files ?? []) if (file.kind === "blob") into.add(file.blob);
  } else if (event.type === "session_rewind") {
    for (const file of (event.payload as RewindPayload).undo?.files ?? []) if (file.kind === "blob") into.add(file.blob);
  }
}
