// The JSON files of a session folder (session.json, records/*.json), parsed as the library wrote them.
import { StoreTamperedError } from "../../core/errors.js";
import type { SessionRecord } from "../types.js";

/**
 * A JSON file of the store, parsed. Only the library writes these, whole (temp file + rename), so one
 * that does not parse was changed by hand or by another program: STORE_TAMPERED, the parse error as cause.
 */
export function parseStoreJson(sessionId: string, path: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new StoreTamperedError(sessionId, `${path} is not valid JSON (${text === "" ? "empty" : "garbled"})`, {
      cause: error,
    });
  }
}

/** session.json as `create` wrote it: an object with the session's id and a creation time, or STORE_TAMPERED. */
export function parseSessionRecord(sessionId: string, path: string, text: string): SessionRecord {
  const value = parseStoreJson(sessionId, path, text) as Partial<SessionRecord> | null;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new StoreTamperedError(sessionId, `${path} does not hold a JSON object`);
  if (value.id !== sessionId)
    throw new StoreTamperedError(sessionId, `${path} names session ${JSON.stringify(value.id)}`);
  if (typeof value.createdAt !== "string") throw new StoreTamperedError(sessionId, `${path} has no "createdAt" time`);
  return value as SessionRecord;
}
