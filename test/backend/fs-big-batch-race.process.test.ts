// After an undo of a big cut the log holds one batch of up to 999,999 events (docs/ARCHITECTURE.md, "On disk",
// batches). Readers racing rewinds and undos of a cut bigger than the hold must see a tape the session had, never
// part of a batch. The memory of a reader over such a batch, and a writer killed inside one, are measured in
// fs-big-batch-memory.soak.test.ts.
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { HOLD_EVENTS } from "../../src/backend/fs/whole-batches.js";
import { isAgentTapeError } from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { appendMessages } from "../helpers/long-tape.js";

const children = childrenKilledAfterEach();

// Rounds: 8 rewind + undo races in `npm test`, 25 when soaking (test/helpers/rounds.ts; docs/testing.md, "Rounds").
const RACE_ROUNDS = rounds(8, 25);

describe(`readers racing rewinds and undos of a cut bigger than the hold (${RACE_ROUNDS} rewind + undo rounds)`, () => {
  it("every read is a tape the session had, or TAPE_REWOUND: never part of a batch", { timeout: 300_000 }, async () => {
    const root = resolve(await tempDir("agent-tape-big-batch-race-"));
    const cut = HOLD_EVENTS + 2000; // each undo puts the cut back as one batch, past the hold
    const store = openStore({ root });
    const { id } = await store.create();
    const total = cut + 200;
    await appendMessages(store, id, total, { bytes: 200, batch: 1000 });
    const cutter = new Child("rewind-undo-loop.ts", [root, id, String(cut)]);
    children.push(cutter);
    await cutter.waitForLine((line) => line.startsWith("state"));
    const reads: number[][] = [];
    let rewound = 0;
    const failures: string[] = [];
    const rounds = () => cutter.lines.filter((line) => line.startsWith("state")).length / 2;
    while (rounds() < RACE_ROUNDS && cutter.process.exitCode === null) {
      try {
        const sequences: number[] = [];
        for await (const event of store.read(id)) sequences.push(event.sequence);
        reads.push(sequences);
      } catch (error) {
        if (isAgentTapeError(error) && error.code === "TAPE_REWOUND") rewound++;
        else failures.push(String(error));
      }
    }
    cutter.endInput();
    const run = await cutter.done();
    await store.close();
    expect(run.stderr).toBe("");
    expect(failures).toEqual([]);
    // The tapes the session had end at its first length, at a rewind's target (the log cut, its marker not yet
    // written), or at a rewind's or an undo's marker. A read ending anywhere else saw part of a batch.
    const had = new Set([total]);
    for (const line of run.stdout.split("\n")) {
      const [word, value] = line.split(" ");
      if (word === "target" || word === "state") had.add(Number(value));
    }
    const partial = reads.filter((sequences) => !had.has(sequences.at(-1)!));
    expect(partial.map((sequences) => sequences.at(-1))).toEqual([]);
    expect(reads.length).toBeGreaterThan(RACE_ROUNDS);
    console.log(`${reads.length} reads, ${rewound} TAPE_REWOUND, over ${rounds()} rewind + undo rounds`);
  });
});
