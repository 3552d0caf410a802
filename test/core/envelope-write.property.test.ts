// serializeEvent against a reference written plainly: every envelope string through JSON.stringify, the payload as
// the line carries it, the line read back as the event. The writer puts an id, a session id, a type and a date
// between quotes as they are when they need no escaping (envelope.ts): generated strings here hold what does
// (quotes, backslashes, control characters, lone surrogates, astral characters) and what does not. Also checked:
// lineBytesAtMost, which counts the line's bytes field by field, is never below the bytes of the line written
// with the longest sequence and batch mark.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lineBytesAtMost, serializeEvent } from "../../src/core/envelope.js";
import type { StoredEvent } from "../../src/index.js";
import { rounds } from "../helpers/rounds.js";

const PIECES = ['"', "\\", "\n", "\u0000", "\u001f", "\u007f", "\ud800", "\udc00", "𝄞", "é", "a", "Z", "0", "-", ":"];
const text = fc.oneof(
  fc.array(fc.constantFrom(...PIECES), { maxLength: 10 }).map((parts) => parts.join("")),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.constantFrom("01M97NH6FG0V8XDM4B3Y5WN6DM", "message", "2026-12-07T07:05:27.757Z", ""),
);

const event: fc.Arbitrary<StoredEvent> = fc.record({
  v: fc.constantFrom(1, 2),
  id: text,
  sessionId: text,
  sequence: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  type: text,
  createdAt: text,
  payload: fc.record({ content: text, n: fc.integer() }),
}) as fc.Arbitrary<StoredEvent>;

function reference(e: StoredEvent, batch?: { first: number; last: number }): string {
  const mark = batch ? `"batch":[${batch.first},${batch.last}],` : "";
  return (
    `{"v":${e.v},"id":${JSON.stringify(e.id)},"sessionId":${JSON.stringify(e.sessionId)},"sequence":${e.sequence},` +
    `${mark}"type":${JSON.stringify(e.type)},"createdAt":${JSON.stringify(e.createdAt)},"payload":`
  );
}

describe("serializeEvent (property)", () => {
  it("writes the envelope as JSON.stringify would, and the line reads back as the event", () => {
    fc.assert(
      fc.property(event, fc.boolean(), (e, marked) => {
        const batch = marked ? { first: e.sequence, last: e.sequence } : undefined;
        const line = serializeEvent(e, batch);
        expect(line.startsWith(reference(e, batch))).toBe(true);
        const { batch: _mark, ...read } = JSON.parse(line);
        expect(read).toEqual(e);
      }),
      { numRuns: rounds(500, 20_000) },
    );
  });

  it("counts at least the bytes of the line with the longest sequence and mark", () => {
    fc.assert(
      fc.property(event, (e) => {
        const longest = { ...e, sequence: Number.MAX_SAFE_INTEGER };
        const line = serializeEvent(longest, { first: Number.MAX_SAFE_INTEGER, last: Number.MAX_SAFE_INTEGER });
        expect(lineBytesAtMost(e)).toBeGreaterThanOrEqual(Buffer.byteLength(line) + 1);
      }),
      { numRuns: rounds(500, 20_000) },
    );
  });
});
