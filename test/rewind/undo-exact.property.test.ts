// Rewind then undo, again and again, against a model of the tape (docs/ARCHITECTURE.md, "Undo"): after each
// undo the tape is what it was before the rewind, the cut events back in order with their ids and payloads,
// numbered on after the rewind's marker, the undo's marker last. Random tapes of single appends and
// appendMany batches, events of many 64 KB steps in multi-byte characters, targets anywhere (inside a batch,
// inside the batch an earlier undo put back), on the filesystem backend (byte-range archives) and the memory
// backend (archives of events), which must end with the same tape.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type SessionStore, rewind, undoRewind, type StoredEvent } from "../../src/index.js";
import { memoryBackend } from "../../src/backend/index.js";
import type { RewindPayload } from "../../src/core/events.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const PIECES = ["a", "é", "😀", '\n{"sequence":5,', '\\"', "\u2028"];

type Write = { many: number; piece: number; repeat: number };
const write: fc.Arbitrary<Write> = fc.record({
  many: fc.oneof({ weight: 3, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 4 }) }),
  piece: fc.nat(PIECES.length - 1),
  repeat: fc.oneof(
    { weight: 6, arbitrary: fc.nat(100) },
    { weight: 1, arbitrary: fc.integer({ min: 20_000, max: 60_000 }) },
  ),
});

/** Writes, then rewinds (to a point picked among the tape's events), each undone at once. */
interface Story {
  writes: Write[];
  rounds: { pick: number; more: Write[] }[];
}
const story: fc.Arbitrary<Story> = fc.record({
  writes: fc.array(write, { minLength: 1, maxLength: 8 }),
  rounds: fc.array(fc.record({ pick: fc.nat(), more: fc.array(write, { maxLength: 2 }) }), {
    minLength: 1,
    maxLength: 3,
  }),
});

const say = (w: Write, n: number) => ({
  type: "message" as const,
  payload: { role: "user" as const, content: `${n} ${PIECES[w.piece]!.repeat(w.repeat)}` },
});

/** What a tape is, for comparing: each event's number, type and payload, and the id of what is not a marker. */
function shape(events: StoredEvent[]) {
  return events.map((e) =>
    e.type === "session_rewind"
      ? { sequence: e.sequence, type: e.type, undoOf: (e.payload as RewindPayload).undoOf ?? null }
      : { sequence: e.sequence, type: e.type, id: e.id, payload: e.payload },
  );
}

async function play(store: SessionStore, s: Story) {
  const { id } = await store.create();
  let n = 0;
  const writeAll = async (writes: Write[]) => {
    for (const w of writes) {
      if (w.many === 1) await store.append(id, say(w, n++));
      else
        await store.appendMany(
          id,
          Array.from({ length: w.many }, () => say(w, n++)),
        );
    }
  };
  await writeAll(s.writes);
  for (const round of s.rounds) {
    const before = await store.readAll(id);
    // Anywhere but the last event (a rewind there changes nothing): 0 is the tape's start.
    const targets = [0, ...before.slice(0, -1).map((e) => e.sequence)];
    const target = targets[round.pick % targets.length]!;
    const rewound = await rewind(store, id, { toSequence: target, mode: "conversation" });
    const undone = await undoRewind(store, id);
    const after = await store.readAll(id);
    // The model: the kept part, the rewind's marker, the cut part renumbered on from it, the undo's marker.
    const kept = before.filter((e) => e.sequence <= target);
    const cut = before.filter((e) => e.sequence > target);
    const marker = rewound.markerSequence!;
    const expected = [
      ...shape(kept),
      { sequence: marker, type: "session_rewind", undoOf: null },
      ...shape(cut).map((e, i) => ({ ...e, sequence: marker + 1 + i })),
      { sequence: undone.markerSequence, type: "session_rewind", undoOf: marker },
    ];
    expect(shape(after)).toEqual(expected);
    expect(undone.markerSequence).toBe(marker + cut.length + 1);
    expect(undone.eventsRestored).toBe(cut.length);
    await writeAll(round.more);
  }
  return shape(await store.readAll(id)).map((e) => ("id" in e ? { ...e, id: "" } : e));
}

describe("rewind + undo, against a model of the tape", () => {
  it("puts back the cut events exactly, on both backends alike", async () => {
    await fc.assert(
      fc.asyncProperty(story, async (s) => {
        const fsStore = openStore({ root: await tempDir("agent-tape-undo-exact-") });
        const memStore = openStore({ backend: memoryBackend() });
        try {
          expect(await play(fsStore, s)).toEqual(await play(memStore, s));
        } finally {
          await fsStore.close();
          await memStore.close();
        }
      }),
      { numRuns: rounds(15, 80) },
    );
  });
});
