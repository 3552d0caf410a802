// Lock-free readers reading the whole tape, and its end from a sequence (a backward seek), while another process
// cuts the log and puts it back, over and over (test/children/rewind-undo-loop.ts: rewind 30 events back, undo;
// the undo puts them back as one batch, the next rewind cuts inside that batch, the one after in place). The log
// is ~700 KB, so a read takes a dozen 64 KB reads a cut can fall between. Every read must give a tape that was:
// the messages a contiguous run from "event 0" in order (no gap, no duplicate, nothing glued), sequences rising,
// and its last event one the tape really ended with (the child reports each state). TAPE_REWOUND (read again)
// is allowed; anything else is a failure (docs/ARCHITECTURE.md, "On disk": a cut in place).
import { realpath } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { isAgentTapeError, type StoredEvent } from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

// 15 rewind + undo rounds in `npm test`, 60 when soaking (test/helpers/rounds.ts).
const ROUNDS = rounds(15, 60);
const EVENTS = 300;

/** What is wrong with a read, or undefined. `from`: the first sequence asked for. */
function problemOf(events: StoredEvent[], from: number): string | undefined {
  let previous = 0;
  let message: number | undefined;
  for (const event of events) {
    if (event.sequence <= previous) return `sequence ${event.sequence} after ${previous}`;
    if (event.sequence < from) return `sequence ${event.sequence} before ${from}`;
    previous = event.sequence;
    if (event.type !== "message") continue;
    const n = Number((event.payload as { content: string }).content.split(" ")[1]);
    if (message !== undefined && n !== message + 1) return `message ${n} after message ${message}`;
    if (message === undefined && from <= 1 && n !== 0) return `the first message is ${n}`;
    message = n;
  }
  return undefined;
}

it(`whole reads and reads from a sequence during cuts see only tapes that were (${ROUNDS} rewind + undo rounds)`, {
  timeout: 400_000,
}, async () => {
  const root = join(await realpath(await tempDir("agent-tape-full-reads-cut-")), "sessions");
  const store = openStore({ root });
  const { id } = await store.create();
  for (let i = 0; i < EVENTS; i += 50)
    await store.appendMany(
      id,
      Array.from({ length: 50 }, (_, k) => ({
        type: "message" as const,
        payload: { role: "user" as const, content: `event ${i + k} ${"é".repeat(300 + ((i + k) % 7) * 200)}` },
      })),
    );
  const cutter = new Child("rewind-undo-in-place-loop.ts", [root, id, "30"]);
  children.push(cutter);
  await cutter.waitForLine((line) => line.startsWith("state"));
  const failures: string[] = [];
  const ends: number[] = [];
  let reads = 0;
  let rewound = 0;
  const rounds = () => cutter.lines.filter((line) => line.startsWith("state")).length / 2;
  // Each loop runs until the cutter has done its rounds and the readers have read more times than that: the cutter
  // cuts on until its input ends, so reads past its rounds still meet cuts (on a loaded machine the readers had
  // come to exactly 15 reads in 15 rounds, and the check below failed on a machine too slow, not on a bad read).
  const attempts = () => reads + rewound;
  const reader = async (fromEnd: boolean) => {
    const own = openStore({ root });
    while ((rounds() < ROUNDS || attempts() <= ROUNDS) && cutter.process.exitCode === null) {
      let from = 1;
      const events: StoredEvent[] = [];
      try {
        // head() reads the log's end backwards: a cut in place under it too (LOG_CORRUPT, before the fix).
        if (fromEnd) from = Math.max(1, (await own.head(id)) - 40);
        for await (const event of own.read(id, { fromSequence: from })) events.push(event);
      } catch (error) {
        if (isAgentTapeError(error, "TAPE_REWOUND")) rewound++;
        else failures.push(String(error));
        continue;
      }
      reads++;
      const problem = problemOf(events, from);
      if (problem !== undefined) failures.push(`${fromEnd ? "from the end" : "whole"}: ${problem}`);
      if (events.length > 0) ends.push(events.at(-1)!.sequence);
    }
    await own.close();
  };
  // And the last event alone, read backwards from the end (head, get, list), as often as it can be.
  let heads = 0;
  const header = async () => {
    const own = openStore({ root });
    while ((rounds() < ROUNDS || heads <= ROUNDS) && cutter.process.exitCode === null) {
      try {
        ends.push(await own.head(id));
        heads++;
      } catch (error) {
        failures.push(`head: ${String(error)}`);
      }
    }
    await own.close();
  };
  await Promise.all([reader(false), reader(true), header()]);
  cutter.endInput();
  const run = await cutter.done();
  expect(run.stderr).toBe("");
  const had = new Set([EVENTS]);
  for (const line of run.stdout.split("\n")) {
    const [word, value] = line.split(" ");
    if (word === "target" || word === "state") had.add(Number(value));
  }
  expect(failures).toEqual([]);
  // The readers ran through the cuts (the loops above stop early only if the cutter died): a read that met one and
  // said TAPE_REWOUND counts too.
  expect(reads + rewound, `reads (${rewound} TAPE_REWOUND)`).toBeGreaterThan(ROUNDS);
  expect(heads).toBeGreaterThan(ROUNDS);
  expect(ends.filter((sequence) => !had.has(sequence))).toEqual([]);
  await store.close();
});
