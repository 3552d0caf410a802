import fc from "fast-check";
import { rm } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { isAgentTapeError, type Durability, type StoredEvent } from "../../src/index.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// The model: a session is the array of events it holds. Nothing else about the store is modelled.
interface ModelSession {
  id: string;
  events: StoredEvent[];
}

const TYPES = ["message", "usage", "tool_call", "session_fork"] as const;

type Input =
  | { type: "message"; payload: { role: "user"; content: string } }
  | { type: "usage"; payload: { inputTokens: number } };

const input: fc.Arbitrary<Input> = fc.oneof(
  fc
    .string({ maxLength: 12 })
    .map((content) => ({ type: "message" as const, payload: { role: "user" as const, content } })),
  fc.nat({ max: 10_000 }).map((inputTokens) => ({ type: "usage" as const, payload: { inputTokens } })),
);

type Op =
  | { kind: "append"; session: number; event: Input }
  | { kind: "appendMany"; session: number; events: Input[] }
  | { kind: "concurrentAppends"; session: number; calls: (Input | Input[])[] }
  | { kind: "fork"; session: number; at: number; beyondEnd: number }
  | {
      kind: "read";
      session: number;
      from: number | undefined;
      to: number | undefined;
      types: (typeof TYPES)[number][] | undefined;
    }
  | { kind: "reopen" };

const session = fc.nat({ max: 7 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("append" as const), session, event: input }), weight: 4 },
  {
    arbitrary: fc.record({
      kind: fc.constant("appendMany" as const),
      session,
      events: fc.array(input, { maxLength: 5 }),
    }),
    weight: 2,
  },
  {
    // Each call is an append or (an array) an appendMany, issued without waiting for the others.
    arbitrary: fc.record({
      kind: fc.constant("concurrentAppends" as const),
      session,
      calls: fc.array(fc.oneof(input, fc.array(input, { minLength: 1, maxLength: 3 })), { minLength: 2, maxLength: 6 }),
    }),
    weight: 2,
  },
  // `at` is a fraction of the session's length, below 1 (at 1 the fork would ask for the event after the last);
  // `beyondEnd` > 0 asks for a fork past the end, which must be refused.
  {
    arbitrary: fc.record({
      kind: fc.constant("fork" as const),
      session,
      at: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      beyondEnd: fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 1, max: 3 })),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant("read" as const),
      session,
      from: fc.option(fc.nat({ max: 30 }), { nil: undefined }),
      to: fc.option(fc.nat({ max: 30 }), { nil: undefined }),
      types: fc.option(fc.subarray([...TYPES]), { nil: undefined }),
    }),
    weight: 2,
  },
  { arbitrary: fc.constant({ kind: "reopen" as const }), weight: 1 },
);

const lastOf = (s: ModelSession) => s.events[s.events.length - 1]?.sequence ?? 0;

function expectedRead(s: ModelSession, from?: number, to?: number, types?: readonly string[]): StoredEvent[] {
  return s.events.filter(
    (e) =>
      (from === undefined || e.sequence >= from) &&
      (to === undefined || e.sequence <= to) &&
      (types === undefined || types.includes(e.type)),
  );
}

async function runAgainstModel(ops: Op[], durability: Durability, lockIdleMs: number): Promise<void> {
  const root = await tempDir("agent-tape-prop-");
  const open = () => openStore({ root, durability, lockIdleMs });
  let store = open();
  try {
    const sessions: ModelSession[] = [{ id: (await store.create()).id, events: [] }];
    for (const o of ops) {
      if (o.kind === "reopen") {
        await store.close();
        store = open();
        continue;
      }
      const s = sessions[o.session % sessions.length]!;
      switch (o.kind) {
        case "append": {
          const e = await store.append(s.id, o.event);
          expect(e).toMatchObject({
            sessionId: s.id,
            sequence: lastOf(s) + 1,
            type: o.event.type,
            payload: o.event.payload,
          });
          s.events.push(e);
          break;
        }
        case "appendMany": {
          const written = await store.appendMany(s.id, o.events);
          expect(written.map((e) => e.sequence)).toEqual(o.events.map((_, i) => lastOf(s) + 1 + i));
          expect(written.map((e) => e.payload)).toEqual(o.events.map((e) => e.payload));
          s.events.push(...written);
          break;
        }
        case "concurrentAppends": {
          // Issued without waiting in between: they must still land in call order.
          const results = await Promise.all(
            o.calls.map((c) => (Array.isArray(c) ? store.appendMany(s.id, c) : store.append(s.id, c))),
          );
          const written = results.flat();
          const inputs = o.calls.flat();
          expect(written.map((e) => e.sequence)).toEqual(inputs.map((_, i) => lastOf(s) + 1 + i));
          expect(written.map((e) => e.payload)).toEqual(inputs.map((e) => e.payload));
          s.events.push(...written);
          break;
        }
        case "fork": {
          const last = lastOf(s);
          const atSequence = o.beyondEnd > 0 ? last + o.beyondEnd : Math.floor(o.at * (last + 1));
          const before = (await store.list()).length;
          if (o.beyondEnd > 0) {
            const error = await store.fork(s.id, { atSequence }).catch((e: unknown) => e);
            expect(isAgentTapeError(error, "SEQUENCE_OUT_OF_RANGE")).toBe(true);
            expect((await store.list()).length).toBe(before);
            break;
          }
          const info = await store.fork(s.id, { atSequence });
          const prefix = s.events.filter((e) => e.sequence <= atSequence).map((e) => ({ ...e, sessionId: info.id }));
          const forked = await store.readAll(info.id);
          expect(forked.slice(0, -1)).toEqual(prefix);
          expect(forked.at(-1)).toMatchObject({
            sessionId: info.id,
            sequence: (prefix.at(-1)?.sequence ?? 0) + 1,
            type: "session_fork",
            payload: { parentId: s.id, atSequence },
          });
          expect(info.lastSequence).toBe(forked.at(-1)!.sequence);
          sessions.push({ id: info.id, events: forked });
          break;
        }
        case "read": {
          const options = {
            ...(o.from !== undefined && { fromSequence: o.from }),
            ...(o.to !== undefined && { toSequence: o.to }),
            ...(o.types !== undefined && { types: o.types }),
          };
          const streamed: StoredEvent[] = [];
          for await (const e of store.read(s.id, options)) streamed.push(e);
          expect(streamed).toEqual(expectedRead(s, o.from, o.to, o.types));
          break;
        }
      }
    }
    // In the end, on disk, every session is exactly its model, and get() agrees on where it ends.
    for (const s of sessions) {
      expect(await store.readAll(s.id)).toEqual(s.events);
      expect((await store.get(s.id))?.lastSequence).toBe(lastOf(s));
    }
    expect((await store.list()).map((i) => i.id).sort()).toEqual(sessions.map((s) => s.id).sort());
  } finally {
    await store.close();
    await rm(root, { recursive: true, force: true }); // each run's folder goes at once: 60 runs would otherwise pile up
  }
}

describe("the tape against an in-memory model", () => {
  it("agrees with the model for random appends, batches, concurrent appends, forks, reads and reopens", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { maxLength: 30 }),
        fc.constantFrom<Durability>("fsync", "batch", "none"),
        fc.constantFrom(0, 50),
        runAgainstModel,
      ),
      { numRuns: rounds(25, 120) },
    );
  }, 120_000);
});
