import { isTheRecordedWorkspace, workspaceRecordedBy } from "../checkpoint/recorded-workspace.js";
import { WorkspaceMismatchError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";

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
