import { readFile, truncate } from "node:fs/promises";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import type { StorageBackend } from "../../src/backend/types.js";
import type { StoredEvent } from "../../src/index.js";

// Logs holding batches larger than a reader holds back (src/backend/fs/whole-batches.ts), written through the
// real write path: `appendStream`, the way an undo puts a big cut back (docs/ARCHITECTURE.md, "On disk").

/** An event as the store writes it, ~300 bytes a line. */
export function storedEvent(sessionId: string, sequence: number, tag = "ev"): StoredEvent {
  return {
    v: 1,
    id: `${tag}-${sequence}`,
    sessionId,
    sequence,
    type: "message",
    createdAt: "2026-12-01T00:00:00.000Z",
    payload: { role: "user", content: `event ${sequence} `.padEnd(200, "z") },
  };
}

export async function* eventsFrom(sessionId: string, first: number, last: number): AsyncGenerator<StoredEvent> {
  for (let sequence = first; sequence <= last; sequence++) yield storedEvent(sessionId, sequence);
}

/** A new session on `root` through the fs backend. */
export async function newSession(root: string, id = "big-batch"): Promise<{ backend: StorageBackend; id: string }> {
  const backend = fsBackend({ root });
  await backend.createSession({ id, createdAt: new Date().toISOString() });
  return { backend, id };
}

/** Appends events `first..last` as single lines (no batch mark), a chunk per write. */
export async function appendSingles(
  backend: StorageBackend,
  id: string,
  first: number,
  last: number,
  tag = "ev",
): Promise<void> {
  const locked = await backend.lock(id);
  try {
    for (let from = first; from <= last; from += 1000) {
      const chunk = [];
      for (let sequence = from; sequence <= Math.min(last, from + 999); sequence++)
        chunk.push(storedEvent(id, sequence, tag));
      await locked.append(chunk, { separately: true, sync: false });
    }
  } finally {
    await locked.release();
  }
}

/** Appends events `first..last` as one batch, streamed as an undo does. */
export async function appendBatch(backend: StorageBackend, id: string, first: number, last: number): Promise<void> {
  const locked = await backend.lock(id);
  try {
    await locked.appendStream!(eventsFrom(id, first, last), { first, last }, { sync: false });
  } finally {
    await locked.release();
  }
}

/** Byte offset just past the line of `sequence` in the log (which must hold it). */
export async function endOfLine(log: string, sequence: number): Promise<number> {
  const text = await readFile(log, "utf8");
  const at = text.indexOf(`"sequence":${sequence},`);
  if (at === -1) throw new Error(`no line of sequence ${sequence} in ${log}`);
  return Buffer.byteLength(text.slice(0, text.indexOf("\n", at) + 1));
}

/** The log as a writer killed mid-batch leaves it: cut at the end of the line of `sequence`. */
export async function killedAfter(log: string, sequence: number): Promise<void> {
  await truncate(log, await endOfLine(log, sequence));
}
