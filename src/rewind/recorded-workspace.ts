import { realpath } from "node:fs/promises";
import { resolve } from "node:path";
import { WorkspaceMismatchError } from "../core/errors.js";
import type { CheckpointPayload, RewindPayload, StoredEvent } from "../core/events.js";

/**
 * The workspace a rewind may write to when the caller names none (docs/ARCHITECTURE.md, "Confinement"):
 * the one the tape recorded, in the checkpoints (and "files" rewind markers) it restores from — not
 * session.json's, which anyone who can write the session folder can edit. WORKSPACE_MISMATCH when
 * session.json names another folder, or when those events disagree among themselves.
 * Returns `named` when the events after the target record no workspace (then no file changes).
 */
export async function recordedWorkspace(
  sessionId: string,
  after: readonly StoredEvent[],
  named: string,
): Promise<string> {
  const recorded = new Set<string>();
  for (const event of after) {
    if (event.type === "session_checkpoint") {
      const payload = event.payload as CheckpointPayload;
      if (payload.files.length > 0) recorded.add(payload.workspace);
    } else if (event.type === "session_rewind") {
      const undo = (event.payload as RewindPayload).undo;
      if ((event.payload as RewindPayload).mode === "files" && undo && undo.files.length > 0)
        recorded.add(undo.workspace);
    }
  }
  if (recorded.size === 0) return named;
  const [only] = recorded;
  if (recorded.size === 1 && (await sameFolder(named, only!))) return only!;
  throw new WorkspaceMismatchError(sessionId, [...recorded], named);
}

async function sameFolder(named: string, recorded: string): Promise<boolean> {
  if (resolve(named) === recorded) return true;
  try {
    return (await realpath(named)) === recorded;
  } catch {
    return false; // a folder that cannot be resolved is not the one recorded
  }
}
