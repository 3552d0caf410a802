import { join } from "node:path";
import { SessionStore } from "../src/index.js";
import { interleavedRounds, seconds, type Suite } from "./harness.js";

/**
 * `conversation()` on a tape of tool calls with no assistant message between them (an agent firing
 * tools back to back) against the same number of events as ordinary turns (message, call, result).
 * Finding each result's call used to scan the message's calls: quadratic in the first shape.
 */
export const conversationSuite: Suite = {
  name: "conversation",
  async run({ quick, tempDir }) {
    const events = quick ? 10_000 : 100_000;
    const rounds = quick ? 2 : 3;
    const store = new SessionStore({ root: join(await tempDir(), "sessions"), durability: "none" });
    try {
      const toolCallsOnly = await store.create();
      const ordinaryTurns = await store.create();
      await fill(store, toolCallsOnly.id, events, (i) =>
        i % 2 === 0
          ? { type: "tool_call", payload: { callId: `c${i}`, name: "read_file", input: { path: `f${i}` } } }
          : { type: "tool_result", payload: { callId: `c${i - 1}`, output: "ok" } },
      );
      // Results arrive after all their calls here: the worst case for a scan from the start.
      await fill(store, ordinaryTurns.id, events, (i) =>
        i % 3 === 0
          ? { type: "message", payload: { role: "assistant", content: "reading" } }
          : i % 3 === 1
            ? { type: "tool_call", payload: { callId: `c${i}`, name: "read_file", input: { path: `f${i}` } } }
            : { type: "tool_result", payload: { callId: `c${i - 1}`, output: "ok" } },
      );
      const samples = await interleavedRounds(rounds, {
        toolCallsOnly: () => timed(() => store.conversation(toolCallsOnly.id)),
        ordinaryTurns: () => timed(() => store.conversation(ordinaryTurns.id)),
      });
      const ours = seconds(`conversation(), ${events} tool-call events, no message between`, samples.toolCallsOnly);
      const baseline = seconds(`conversation(), ${events} events of ordinary turns`, samples.ordinaryTurns);
      return [
        {
          suite: "conversation: back-to-back tool calls vs ordinary turns",
          ours,
          baseline,
          ratio: ours.value / baseline.value,
          target: { op: "<=", value: 2, on: "ratio" },
          notes: `${events} events each, ${rounds} rounds`,
        },
      ];
    } finally {
      await store.close();
    }
  },
};

async function fill(
  store: SessionStore,
  id: string,
  count: number,
  make: (i: number) => { type: string; payload: unknown },
): Promise<void> {
  const chunk = 1000;
  for (let start = 0; start < count; start += chunk) {
    const batch = Array.from({ length: Math.min(chunk, count - start) }, (_, k) => make(start + k));
    await store.appendMany(id, batch as never);
  }
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}
