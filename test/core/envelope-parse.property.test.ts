// parseEventLine against a reference written plainly: parse the whole line, check the envelope, take the mark off
// with a rest copy. Lines are generated in the shapes a log can hold: the writer's own (marked or not), fields in
// another order, the mark nested in the payload or repeated, ids and payloads holding braces, brackets, quotes
// and text shaped like a mark, marks that are not [first, last] around the sequence, spaces a hand edit adds.
// The reader's copy of a marked line into a literal (withoutMark, for replay speed) must give the same event.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lineBatch, parseEventLine, serializeEvent, type LineMark } from "../../src/core/envelope.js";
import type { StoredEvent } from "../../src/index.js";
import { rounds } from "../helpers/rounds.js";

/** The reference: JSON.parse of the whole line, the envelope checked, the mark checked and taken off. */
function reference(text: string): { event: unknown; mark?: { first: number; last: number } } | string {
  let e: Record<string, unknown>;
  try {
    e = JSON.parse(text);
  } catch {
    return "not valid JSON";
  }
  if (typeof e !== "object" || e === null || Array.isArray(e)) return "not a JSON object";
  if (typeof e.v !== "number" || typeof e.id !== "string" || typeof e.sessionId !== "string") return "envelope";
  if (typeof e.sequence !== "number" || !Number.isSafeInteger(e.sequence) || e.sequence < 1) return "sequence";
  if (typeof e.type !== "string" || typeof e.createdAt !== "string" || !("payload" in e)) return "envelope";
  if (!("batch" in e)) return { event: e };
  const batch = e.batch;
  if (
    !Array.isArray(batch) ||
    batch.length !== 2 ||
    !batch.every((n) => Number.isSafeInteger(n)) ||
    !(batch[0] <= e.sequence && e.sequence <= batch[1])
  )
    return "batch";
  const { batch: _, ...event } = e;
  return { event, mark: { first: batch[0], last: batch[1] } };
}

const HOSTILE = ['"', "\\", "{", "}", "[", "]", ",", ":", '"batch":[1,2]', ',"batch":[', "é", "𝄞", " "];
const hostileText = fc.array(fc.constantFrom(...HOSTILE, "a", "7"), { maxLength: 8 }).map((parts) => parts.join(""));
const payload = fc.oneof(
  fc.record({ content: hostileText }),
  fc.record({ sequence: fc.integer({ min: 1, max: 9 }), batch: fc.tuple(fc.nat(9), fc.nat(9)) }),
  fc.jsonValue({ maxDepth: 2 }),
);
const mark = fc.option(
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ before: fc.nat(5), after: fc.nat(5) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        raw: fc.constantFrom(
          "[1]",
          "[3,1]",
          "[-1,9]",
          "[1.5,9]",
          '["1",9]',
          "[1,2,3]",
          "[99999999999999999,1e20]",
          "null",
          "[ 1 , 9 ]",
        ),
      }),
    },
  ),
);

interface Line {
  id: string;
  sessionId: string;
  sequence: number;
  type: string;
  payload: unknown;
  mark: { before: number; after: number } | { raw: string } | null;
  layout: string;
}

const line: fc.Arbitrary<Line> = fc.record({
  id: hostileText,
  sessionId: hostileText,
  sequence: fc.integer({ min: 1, max: 9 }),
  type: fc.constantFrom("message", "session_rewind_x", "tool_call"),
  payload,
  mark,
  /** How the line is laid out: the writer's own, keys reordered, spaces added, a second mark after the first. */
  layout: fc.constantFrom("own", "own", "own", "reordered", "spaced", "twice", "extra"),
});

function textOf(l: Line): string {
  const event = {
    v: 1,
    id: l.id,
    sessionId: l.sessionId,
    sequence: l.sequence,
    type: l.type,
    createdAt: "t",
    payload: l.payload,
  } as StoredEvent;
  const good =
    l.mark && "before" in l.mark
      ? { first: Math.max(1, l.sequence - l.mark.before), last: l.sequence + l.mark.after }
      : undefined;
  const rawMark = l.mark && "raw" in l.mark ? l.mark.raw : good ? `[${good.first},${good.last}]` : undefined;
  let text = good ? serializeEvent(event, good) : serializeEvent(event);
  if (rawMark !== undefined && !good)
    text = text.replace(`"sequence":${l.sequence},`, `"sequence":${l.sequence},"batch":${rawMark},`);
  switch (l.layout) {
    case "reordered": {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      return JSON.stringify(Object.fromEntries(Object.entries(parsed).reverse()));
    }
    case "spaced":
      return text.replace(/,"/g, ', "').replace(/":/g, '" :');
    case "twice":
      return rawMark === undefined ? text : text.replace(/}$/, `,"batch":${rawMark}}`);
    case "extra":
      return text.replace(/^\{/, '{"later":[{"batch":[1,1]}],');
  }
  return text;
}

describe("parseEventLine, against parsing the whole line and taking the mark off after", () => {
  it("gives the same event, the same mark and the same refusals for every generated line", () => {
    fc.assert(
      fc.property(line, (l) => {
        const text = textOf(l);
        const expected = reference(text);
        const got = parseEventLine(text);
        const asked: LineMark = { batch: undefined };
        const gotWithMark = parseEventLine(text, asked);
        if (typeof expected === "string") {
          expect(typeof got).toBe("string");
          expect(typeof gotWithMark).toBe("string");
          return;
        }
        expect(got).toStrictEqual(expected.event);
        expect(gotWithMark).toStrictEqual(expected.event);
        expect(lineBatch(got as StoredEvent)).toStrictEqual(expected.mark);
        expect(asked.batch).toStrictEqual(expected.mark);
      }),
      { numRuns: rounds(2000, 20000) },
    );
  });
});
