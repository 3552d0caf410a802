import { describe, expect, it } from "vitest";
import { type Conversation, foldConversation, type StoredEvent } from "../../src/index.js";

let sequence = 0;
function event(type: string, payload: unknown): StoredEvent {
  sequence++;
  return { v: 1, id: `e${sequence}`, sessionId: "s", sequence, type, createdAt: "2026-01-01T00:00:00.000Z", payload };
}
function fold(events: StoredEvent[], state: Conversation = { messages: [], lastSequence: 0 }): Conversation {
  return events.reduce(foldConversation, state);
}

describe("foldConversation", () => {
  it("attaches each result to its call among thousands of calls with no assistant message between them", () => {
    const events: StoredEvent[] = [];
    for (let i = 0; i < 5000; i++) events.push(event("tool_call", { callId: `c${i}`, name: "t", input: i }));
    // Results in reverse order: the newest call first, the oldest last.
    for (let i = 4999; i >= 0; i--) events.push(event("tool_result", { callId: `c${i}`, output: i * 2 }));
    const conversation = fold(events);
    expect(conversation.messages).toHaveLength(1);
    const calls = conversation.messages[0]!.toolCalls;
    expect(calls).toHaveLength(5000);
    expect(calls.every((call, i) => call.callId === `c${i}` && call.result?.output === i * 2)).toBe(true);
  });

  it("a result for a call id used twice goes to the most recent call that has no result yet", () => {
    const conversation = fold([
      event("message", { role: "assistant", content: "first" }),
      event("tool_call", { callId: "x", name: "t", input: 1 }),
      event("tool_result", { callId: "x", output: "one" }),
      event("message", { role: "assistant", content: "second" }),
      event("tool_call", { callId: "x", name: "t", input: 2 }),
      event("tool_result", { callId: "x", output: "two" }),
    ]);
    expect(conversation.messages.map((m) => m.toolCalls.map((c) => c.result?.output))).toEqual([["one"], ["two"]]);
  });

  it("finds calls in a state built elsewhere (a copy, or a state restored from JSON)", () => {
    const first = fold([
      event("message", { role: "assistant", content: "a" }),
      event("tool_call", { callId: "k", name: "t", input: 1 }),
    ]);
    const copy = JSON.parse(JSON.stringify(first)) as Conversation;
    const conversation = fold([event("tool_result", { callId: "k", output: "done" })], copy);
    expect(conversation.messages[0]!.toolCalls[0]!.result?.output).toBe("done");
  });

  it("a result whose call was compacted away is dropped, and later calls still get theirs", () => {
    const conversation = fold([
      event("message", { role: "assistant", content: "a" }),
      event("tool_call", { callId: "old", name: "t", input: 1 }),
      event("compaction", { summary: "earlier work", throughSequence: sequence }),
      event("tool_result", { callId: "old", output: "late" }),
      event("tool_call", { callId: "new", name: "t", input: 2 }),
      event("tool_result", { callId: "new", output: "ok" }),
    ]);
    const calls = conversation.messages.flatMap((m) => m.toolCalls);
    expect(calls.map((c) => [c.callId, c.result?.output])).toEqual([["new", "ok"]]);
  });
});
