// `beforeCallId` is found going back from the end of the tape in windows of sequences twice as long each time
// (src/rewind/target.ts). Against a forwards model of its rule (docs/ARCHITECTURE.md, "Conflicts"): the event
// just before the call's latest tool_call, else just before the first checkpoint naming it (0 at the tape's
// start). Random tapes with gaps in the sequence as long as several windows (a rewind's marker skips the
// numbers it cut), call ids used by several tool calls, checkpoints naming calls before or after their call.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isAgentTapeError, type StoredEvent } from "../../src/index.js";
import { fsBackend } from "../../src/backend/index.js";
import { resolveTarget } from "../../src/rewind/target.js";
import { rounds } from "../helpers/rounds.js";
import { tempDir } from "../helpers/fixture.js";

const IDS = ["c1", "c2", "c3"];

type Step = { gap: number; kind: "message" | "tool_call" | "session_checkpoint"; call: number };
const step: fc.Arbitrary<Step> = fc.record({
  gap: fc.oneof({ weight: 12, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 1500 }) }),
  kind: fc.constantFrom("message" as const, "message" as const, "tool_call" as const, "session_checkpoint" as const),
  call: fc.nat(IDS.length - 1),
});

function tapeOf(sessionId: string, steps: Step[]): StoredEvent[] {
  let sequence = 0;
  return steps.map((s, i) => ({
    v: 1,
    id: `e${i}`,
    sessionId,
    sequence: (sequence += s.gap),
    type: s.kind,
    createdAt: "2026-12-01T00:00:00.000Z",
    payload: s.kind === "message" ? { role: "user", content: `m${i}` } : { callId: IDS[s.call] },
  }));
}

/** The rule, read forwards over the whole tape. */
function model(events: StoredEvent[], callId: string): number | undefined {
  const before = (i: number) => (i === 0 ? 0 : events[i - 1]!.sequence);
  const names = (e: StoredEvent, type: string) =>
    e.type === type && (e.payload as { callId?: string }).callId === callId;
  let call: number | undefined;
  events.forEach((e, i) => {
    if (names(e, "tool_call")) call = i;
  });
  if (call !== undefined) return before(call);
  const checkpoint = events.findIndex((e) => names(e, "session_checkpoint"));
  return checkpoint === -1 ? undefined : before(checkpoint);
}

describe("beforeCallId, found backwards in widening windows", () => {
  it("agrees with the rule read forwards", async () => {
    const root = await tempDir("agent-tape-before-call-");
    const backend = fsBackend({ root });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 700 }), async (steps) => {
        const id = `before-call-${n++}`;
        const events = tapeOf(id, steps);
        await backend.createSession({ id, createdAt: "2026-12-01T00:00:00.000Z" }, events);
        const last = events.at(-1)!.sequence;
        for (const callId of IDS) {
          const expected = model(events, callId);
          const found = await resolveTarget(backend, id, { beforeCallId: callId }, last, {}).catch((error) => {
            if (isAgentTapeError(error, "INVALID_ARGUMENT")) return undefined; // nothing names the call
            throw error;
          });
          expect(found, callId).toBe(expected);
        }
      }),
      { numRuns: rounds(40, 240) },
    );
  });
});
