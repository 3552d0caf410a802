// The line codec: a line marked with its batch reads back as the same event as the line without the mark,
// whichever way the mark is asked for.
import { describe, expect, it } from "vitest";
import { lineBatch, parseEventLine, serializeEvent, type LineMark } from "../../src/core/envelope.js";
import type { StoredEvent } from "../../src/core/events.js";

const event: StoredEvent = {
  v: 1,
  id: "evt_1",
  sessionId: "s1",
  sequence: 7,
  type: "message",
  createdAt: "2026-12-01T00:00:00.000Z",
  payload: { role: "user", content: "hi" },
};

describe("parseEventLine", () => {
  it("reads a marked line as the event of the unmarked line, its mark apart", () => {
    const plain = parseEventLine(serializeEvent(event));
    const marked = parseEventLine(serializeEvent(event, { first: 5, last: 9 }));
    expect(marked).toStrictEqual(plain);
    expect(Object.keys(marked as StoredEvent)).toEqual(Object.keys(plain as StoredEvent));
    expect(lineBatch(marked as StoredEvent)).toEqual({ first: 5, last: 9 });
    expect(lineBatch(plain as StoredEvent)).toBeUndefined();
  });

  it("hands the mark to a caller that asks for it, and then keeps none on the side", () => {
    const mark: LineMark = { batch: undefined };
    const marked = parseEventLine(serializeEvent(event, { first: 5, last: 9 }), mark);
    expect(mark.batch).toEqual({ first: 5, last: 9 });
    expect(lineBatch(marked as StoredEvent)).toBeUndefined();
    parseEventLine(serializeEvent(event), mark);
    expect(mark.batch).toBeUndefined();
  });

  it("keeps a field it does not know on a marked line, as on an unmarked one", () => {
    const line = serializeEvent(event, { first: 5, last: 9 }).replace(`"type"`, `"later":true,"type"`);
    const unmarked = serializeEvent(event).replace(`"type"`, `"later":true,"type"`);
    expect(parseEventLine(line)).toStrictEqual(parseEventLine(unmarked));
    expect((parseEventLine(line) as unknown as Record<string, unknown>).later).toBe(true);
  });

  it("refuses a mark that is not [first, last] around the line's sequence", () => {
    expect(parseEventLine(serializeEvent(event, { first: 8, last: 9 }))).toMatch(/"batch" is not/);
    expect(parseEventLine(serializeEvent(event).replace(`"type"`, `"batch":[1],"type"`))).toMatch(/"batch" is not/);
  });
});
