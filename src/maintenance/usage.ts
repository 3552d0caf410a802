// Maintenance, usage: where a session's bytes are (docs/ARCHITECTURE.md, "Retention").
import type { SignalOption, StorageUsage } from "../backend/types.js";
import { InvalidArgumentError, SessionNotFoundError } from "../core/errors.js";
import type { SessionStore } from "../session/session-store.js";

/** A session's bytes on disk, part by part. */
export interface SessionUsage extends StorageUsage {
  sessionId: string;
}

/**
 * Bytes the session takes: its log, its blobs (as stored, compressed where that paid), its side
 * records (rewind archives, the workspace index) and the rest. Takes no lock; counts one stat per
 * file. Throws SESSION_NOT_FOUND, or INVALID_ARGUMENT when the backend cannot tell (it has no `usage`).
 */
export async function usage(store: SessionStore<any>, id: string, options: SignalOption = {}): Promise<SessionUsage> {
  const backend = store.backend;
  if (!backend.usage) {
    throw new InvalidArgumentError(`The ${backend.name} backend cannot report usage.`);
  }
  if (!(await backend.getSession(id, options))) throw new SessionNotFoundError(id);
  return { sessionId: id, ...(await backend.usage(id, options)) };
}
