import type { StoredEvent } from "../core/events.js";

/** A fork into its own folder: the parent's workspace (`from`) and the fork's (`to`), both real paths. */
export interface WorkspaceMove {
  from: string;
  to: string;
}

/**
 * The event as a fork into its own folder records it: every workspace its payload names that is the
 * parent's now names the fork's (docs/ARCHITECTURE.md, "Forks"). The copied checkpoints describe the files
 * the fork's folder was made from, so its rewinds, undos and conflict checks act there and never in the
 * parent's folder. Other events, and workspaces other than the parent's, are copied as they are.
 */
export function rehomed(event: StoredEvent, move: WorkspaceMove): StoredEvent {
  const payload = event.payload as Record<string, unknown> | null;
  if (payload === null || typeof payload !== "object") return event;
  const moved = (value: unknown) => (value === move.from ? move.to : value);
  if (event.type === "session_checkpoint" || event.type === "session_file_states") {
    if (payload.workspace !== move.from) return event;
    return { ...event, payload: { ...payload, workspace: move.to } };
  }
  if (event.type === "session_rewind") {
    const undo = payload.undo as { workspace?: unknown } | undefined;
    const wrote = payload.wrote as { workspace?: unknown } | undefined;
    if (undo?.workspace !== move.from && wrote?.workspace !== move.from) return event;
    const copy: Record<string, unknown> = { ...payload };
    if (undo) copy.undo = { ...undo, workspace: moved(undo.workspace) };
    if (wrote) copy.wrote = { ...wrote, workspace: moved(wrote.workspace) };
    return { ...event, payload: copy };
  }
  return event;
}
