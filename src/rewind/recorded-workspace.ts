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
    const workspace = workspaceRecordedBy(event);
    if (workspace !== undefined) recorded.add(workspace);
  }
  if (recorded.size === 0) return named;
  if (await isTheRecordedWorkspace(named, recorded)) return [...recorded][0]!;
  throw new WorkspaceMismatchError(sessionId, [...recorded], named);
}

/** The workspace an event took snapshots in, if it holds any: a checkpoint, a "files" rewind's undo snapshot. */
export function workspaceRecordedBy(event: StoredEvent): string | undefined {
  if (event.type === "session_checkpoint") {
    const payload = event.payload as CheckpointPayload;
    return payload.files.length > 0 ? payload.workspace : undefined;
  }
  if (event.type !== "session_rewind") return undefined;
  const { mode, undo } = event.payload as RewindPayload;
  return mode === "files" && undo && undo.files.length > 0 ? undo.workspace : undefined;
}

/** True when the tape recorded one workspace and `named` is that folder (as named, or by its real path). */
export async function isTheRecordedWorkspace(named: string, recorded: ReadonlySet<string>): Promise<boolean> {
  if (recorded.size !== 1) return false;
  const [only] = recorded;
  if (resolve(named) === only) return true;
  try {
    return (await realpath(named)) === only;
  } catch {
    return false; // a folder that cannot be resolved is not the one recorded
  }
}
