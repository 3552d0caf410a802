// Events exactly as a backend stores them, for the backend tests that talk to the seam directly.
import type { StorageBackend } from "../../src/backend/types.js";
import type { StoredEvent } from "../../src/core/events.js";
import { archivedEvents, readArchive } from "../../src/blobs/archives.js";

export function event(sessionId: string, sequence: number, content = `event ${sequence}`): StoredEvent {
  return {
    v: 1,
    id: `${sessionId}-${sequence}`,
    sessionId,
    sequence,
    type: "message",
    createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, sequence)).toISOString(),
    payload: { role: "user", content },
  };
}

export function events(sessionId: string, count: number, content?: (n: number) => string): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => event(sessionId, i + 1, content?.(i + 1)));
}

export async function readAll(
  backend: StorageBackend,
  id: string,
  options: Parameters<StorageBackend["readEvents"]>[1] = {},
): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for await (const e of backend.readEvents(id, options)) out.push(e);
  return out;
}

/** The events a rewind archive keeps, whichever form it has (its copied log bytes, checked, or its events). */
export async function archivedEventsOf(backend: StorageBackend, id: string, name: string): Promise<StoredEvent[]> {
  const archive = await readArchive(backend, id, name);
  if (!archive) throw new Error(`no archive ${name} in session ${id}`);
  const out: StoredEvent[] = [];
  for await (const e of archivedEvents(backend, id, name, archive)) out.push(e);
  return out;
}
