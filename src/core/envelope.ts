import stableStringify from "fast-json-stable-stringify";
import type { StoredEvent } from "./events.js";
import { compactPayload, compactPayloadSliced, expandPayload, writtenAsRows } from "./file-rows.js";
import { stableJsonSliced } from "./stable-json-sliced.js";

/**
 * One event as one line of JSON. The envelope keeps the documented field order
 * (v, id, sessionId, sequence, type, createdAt, payload); the payload's keys are sorted, so the
 * same event always has the same bytes — diffable, hashable, testable.
 */
// Payload JSON made when an event is built (core/payload-json.ts), keyed by the event (a payload need
// not be an object): a payload that cannot be written fails alone, before it joins a group-commit
// group, and the stringify runs while the previous write's fsync is still in flight, not in the flush.
// One map per process, found by a registered symbol: the built `agent-tape/backend` entry carries its own
// copy of this file, and a backend from it must still find the JSON the store made.
const PAYLOAD_JSON = Symbol.for("agent-tape.payload-json");
const payloadJson: WeakMap<StoredEvent, string> = ((globalThis as { [PAYLOAD_JSON]?: WeakMap<StoredEvent, string> })[
  PAYLOAD_JSON
] ??= new WeakMap());

/** Remembers `json` as the text of the event's payload for when it is written. */
export function rememberPayloadJson(event: StoredEvent, json: string): void {
  payloadJson.set(event, json);
}

/**
 * Remembers the text of a payload the store built and will not change: `json`, its sorted-key JSON, or for a type
 * written as rows (file-rows.ts), that form's.
 */
export function rememberBuiltPayload(event: StoredEvent, json: string): void {
  payloadJson.set(event, writtenAsRows(event.type) ? lineFormText(event) : json);
}

/**
 * Makes a rewind marker's payload text now, in time slices, for the write that follows at once; call
 * {@link forgetMarkerJson} after that write, since the marker's payload may change later (its undo fills it in).
 * Written in one go inside the write, a 1,000-file marker held the event loop for 13-29 ms (docs/ARCHITECTURE.md,
 * "Batched file work").
 */
export async function prepareMarkerJson(event: StoredEvent): Promise<void> {
  if (event.type !== REWIND_TYPE || typeof event.payload !== "object" || event.payload === null) return;
  markerJson.set(event, (await stableJsonSliced(await compactPayloadSliced(event.type, event.payload))) ?? "null");
}

/** Drops the text {@link prepareMarkerJson} made: it is made again from the payload if written again. */
export function forgetMarkerJson(event: StoredEvent): void {
  markerJson.delete(event);
}

// Marker texts made ahead of their write (prepareMarkerJson). Apart from payloadJson: a rewind marker's line is
// always its line form (rows), whatever JSON was remembered when the event was built. One map per process, as above.
const MARKER_JSON = Symbol.for("agent-tape.marker-json");
const markerJson: WeakMap<StoredEvent, string> = ((globalThis as { [MARKER_JSON]?: WeakMap<StoredEvent, string> })[
  MARKER_JSON
] ??= new WeakMap());

/**
 * The sequences of the batch a line was written in: an `appendMany` (or any one write of several
 * events that must stand or fall together) marks each of its lines `"batch":[first,last]`, so that
 * after a crash mid-write the batch's lines that reached the disk can be recognised and cut
 * (docs/ARCHITECTURE.md, "On disk"). A single append carries no mark.
 */
export interface LineBatch {
  first: number;
  last: number;
}

// Batch marks of parsed lines, kept off the event itself: a reader gets the same event however it was written.
const batchOfLine = new WeakMap<StoredEvent, LineBatch>();

/** The batch the event's line was written in, if it carried a mark (see {@link LineBatch}). */
export function lineBatch(event: StoredEvent): LineBatch | undefined {
  return batchOfLine.get(event);
}

/**
 * Where {@link parseEventLine} puts a line's batch mark (undefined for a line without one) when its caller
 * asks: a reader going through a whole log keeps it for the line at hand only, and a WeakMap entry per
 * event made reading a long batch half as fast as reading unmarked lines.
 */
export interface LineMark {
  batch: LineBatch | undefined;
}

export function serializeEvent(event: StoredEvent, batch?: LineBatch): string {
  return `${envelopeText(event, batch)}${payloadText(event)}}`;
}

/** The line up to its payload's text: `{"v":…,"payload":`. */
function envelopeText(event: StoredEvent, batch?: LineBatch): string {
  const { id, sessionId, type, createdAt } = event;
  // The strings the store makes (an id, a date, a type name) need no escaping: put between quotes as they are, not
  // copied by JSON.stringify first, one string each per line written. The bytes are the same.
  if (plain(id) && plain(sessionId) && plain(type) && plain(createdAt))
    return (
      `{"v":${event.v},"id":"${id}","sessionId":"${sessionId}",` +
      `"sequence":${event.sequence},${batch ? `"batch":[${batch.first},${batch.last}],` : ""}` +
      `"type":"${type}","createdAt":"${createdAt}","payload":`
    );
  return (
    `{"v":${event.v},"id":${JSON.stringify(event.id)},"sessionId":${JSON.stringify(event.sessionId)},` +
    `"sequence":${event.sequence},${batch ? `"batch":[${batch.first},${batch.last}],` : ""}` +
    `"type":${JSON.stringify(event.type)},` +
    `"createdAt":${JSON.stringify(event.createdAt)},` +
    `"payload":`
  );
}

/**
 * Rewind markers in their line form (file-rows.ts), made when written; a payload read as text (null) as that text;
 * checkpoints and file states as remembered when built, else in their line form too.
 */
function payloadText(event: StoredEvent): string {
  if (event.type === REWIND_TYPE && typeof event.payload === "object" && event.payload !== null)
    return markerJson.get(event) ?? lineFormText(event);
  const remembered = payloadJson.get(event);
  if (remembered !== undefined) return remembered;
  return writtenAsRows(event.type) ? lineFormText(event) : (stableStringify(event.payload) ?? "null");
}

function lineFormText(event: StoredEvent): string {
  return stableStringify(compactPayload(event.type, event.payload)) ?? "null";
}

const REWIND_TYPE = "session_rewind";

/** Digits of the longest sequence a line can hold (Number.MAX_SAFE_INTEGER). */
const MAX_SEQUENCE_DIGITS = String(Number.MAX_SAFE_INTEGER).length;
/** Bytes of the longest batch mark. */
const MAX_BATCH_MARK = `"batch":[${Number.MAX_SAFE_INTEGER},${Number.MAX_SAFE_INTEGER}],`.length;

/**
 * The most bytes the event's line (newline included) can take, whatever sequence and batch mark it is
 * given: what `maxEventBytes` is checked against before the event is numbered (under group commit it is
 * numbered only in the flush, too late to fail it alone).
 */
export function lineBytesAtMost(event: StoredEvent): number {
  // Counted field by field, not on the envelope's text: that text is made again when the line is written, and
  // making it here too was a sixth of what the write path allocated per append. The sequence is not counted:
  // the longest one is, below.
  const envelope =
    ENVELOPE_LITERAL_BYTES +
    String(event.v).length +
    jsonBytes(event.id) +
    jsonBytes(event.sessionId) +
    jsonBytes(event.type) +
    jsonBytes(event.createdAt);
  return envelope + Buffer.byteLength(payloadText(event)) + 1 + MAX_SEQUENCE_DIGITS + MAX_BATCH_MARK + 1;
}

/** The bytes of envelopeText's own characters (everything but the values it puts in). */
const ENVELOPE_LITERAL_BYTES = '{"v":,"id":,"sessionId":,"sequence":,"type":,"createdAt":,"payload":'.length;

// Printable ASCII but the quote and the backslash: what JSON.stringify writes as it is, between two quotes.
const PLAIN_JSON_STRING = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** True when `JSON.stringify(text)` is the text between two quotes. */
function plain(text: unknown): text is string {
  return typeof text === "string" && PLAIN_JSON_STRING.test(text);
}

/** The bytes of `JSON.stringify(text)`, without making it for the text an id, a date or a type name is. */
function jsonBytes(text: string): number {
  return plain(text) ? text.length + 2 : Buffer.byteLength(JSON.stringify(text));
}

/**
 * Parses one line and checks the envelope's shape (not the payload: payloads were validated
 * when appended, and re-validating every event would make a replay several times slower).
 * Returns a reason string when the line is not an event.
 */
export function parseEventLine(
  text: string,
  mark?: LineMark,
  payload: "expanded" | "as-written" = "expanded",
): StoredEvent | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `not valid JSON (${(error as Error).message})`;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "not a JSON object";
  const e = value as Record<string, unknown>;
  if (typeof e.v !== "number") return 'missing numeric "v"';
  if (typeof e.id !== "string") return 'missing string "id"';
  if (typeof e.sessionId !== "string") return 'missing string "sessionId"';
  if (typeof e.sequence !== "number" || !Number.isSafeInteger(e.sequence) || e.sequence < 1)
    return '"sequence" is not a positive integer';
  if (typeof e.type !== "string") return 'missing string "type"';
  if (typeof e.createdAt !== "string") return 'missing string "createdAt"';
  if (!("payload" in e)) return 'missing "payload"';
  // "as-written": for a caller that looks at the envelope only (a sequence, a batch mark), a payload's rows are
  // not expanded: for a 1,000-file marker that held the event loop at each lock taken after it.
  if (payload === "expanded" && writtenAsRows(e.type)) e.payload = expandPayload(e.type, e.payload);
  if (!("batch" in e)) {
    if (mark) mark.batch = undefined;
    return e as unknown as StoredEvent;
  }
  const batch = e.batch;
  if (
    !Array.isArray(batch) ||
    batch.length !== 2 ||
    !Number.isSafeInteger(batch[0]) ||
    !Number.isSafeInteger(batch[1]) ||
    !(batch[0] <= e.sequence && e.sequence <= batch[1])
  )
    return '"batch" is not [first, last] around the line\'s sequence';
  const event = withoutMark(e);
  const bounds = { first: batch[0], last: batch[1] };
  if (mark) mark.batch = bounds;
  else batchOfLine.set(event, bounds);
  return event;
}

/**
 * The event of a marked line without its mark. A line as this library writes it has the envelope's fields and
 * the mark, nothing else: those are copied into a literal (the shape an unmarked line parses to; a rest copy cost
 * twice the parse). Any other field (a later version's) is kept, as on an unmarked line.
 */
function withoutMark(e: Record<string, unknown>): StoredEvent {
  let fields = 0;
  for (const _ in e) fields++;
  if (fields !== ENVELOPE_FIELDS + 1) {
    const { batch: _mark, ...event } = e;
    return event as unknown as StoredEvent;
  }
  return {
    v: e.v,
    id: e.id,
    sessionId: e.sessionId,
    sequence: e.sequence,
    type: e.type,
    createdAt: e.createdAt,
    payload: e.payload,
  } as StoredEvent;
}

/** v, id, sessionId, sequence, type, createdAt, payload. */
const ENVELOPE_FIELDS = 7;
