import type { z } from "zod";
import { FileChange, FileSnapshot, FileState, RewindPayload } from "./events.js";
import { sliceIsLong, yieldIfLong } from "./time-slices.js";

/**
 * `RewindPayload.safeParse(payload).data`, made in time slices: the three long lists of a marker (its changes, the
 * undo's before-snapshots and what it wrote) are parsed an entry at a time, the event loop turning between entries
 * once a slice ran long, and the rest of the marker in one go around them. Parsed whole, a 1,000-file marker held
 * the loop 17 ms (docs/ARCHITECTURE.md, "Batched file work"). The same schemas parse the same values, so the result
 * is the one `safeParse` gives (test/core/rewind-payload-sliced.property.test.ts). Undefined when the payload does
 * not parse, or is not shaped so that its lists can be taken out: the caller then parses it whole, for the error.
 */
export async function parseRewindPayloadInSlices(payload: unknown): Promise<RewindPayload | undefined> {
  if (!isPlainObject(payload) || !Array.isArray(payload.changes)) return undefined;
  const { undo, wrote } = payload;
  const undoFiles = isPlainObject(undo) && Array.isArray(undo.files) ? undo.files : undefined;
  const wroteFiles = isPlainObject(wrote) && Array.isArray(wrote.files) ? wrote.files : undefined;
  const head = RewindPayload.safeParse({
    ...payload,
    changes: [],
    ...(undoFiles && { undo: { ...(undo as object), files: [] } }),
    ...(wroteFiles && { wrote: { ...(wrote as object), files: [] } }),
  });
  if (!head.success) return undefined;
  const changes = await parseEach(FileChange, payload.changes);
  const undone = undoFiles && (await parseEach(FileSnapshot, undoFiles));
  const written = wroteFiles && (await parseEach(FileState, wroteFiles));
  if (!changes || (undoFiles && !undone) || (wroteFiles && !written)) return undefined;
  const parsed = head.data;
  parsed.changes = changes;
  if (parsed.undo && undone) parsed.undo.files = undone;
  if (parsed.wrote && written) parsed.wrote.files = written;
  return parsed;
}

async function parseEach<S extends z.ZodType>(schema: S, list: readonly unknown[]): Promise<z.output<S>[] | undefined> {
  const out = new Array<z.output<S>>(list.length);
  for (let i = 0; i < list.length; i++) {
    if (sliceIsLong()) await yieldIfLong();
    const entry = schema.safeParse(list[i]);
    if (!entry.success) return undefined;
    out[i] = entry.data;
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
