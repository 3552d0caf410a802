// Readers that take no lock (`head`, `get`) while another process cuts the log in place and puts
// it back, over and over (test/children/rewind-undo-loop.ts: rewind 20 events back, undo). A reader
// must never fail, and must only ever see a last sequence the tape really had: one the child
// reported after a rewind or an undo, or the rewind's target (the log cut, the rewind's own event
// not yet appended). Runs until the child has done ROUNDS rewind + undo pairs.
import { realpath } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

// 30 rewind + undo rounds in `npm test`, 150 when soaking (test/helpers/rounds.ts).
const ROUNDS = rounds(30, 150);

it(`head() and get() during in-place cuts see only states the tape had (${ROUNDS} rewind + undo rounds)`, {
  timeout: 300_000,
}, async () => {
  const root = join(await realpath(await tempDir("agent-tape-readers-cut-")), "sessions");
  const store = openStore({ root });
  const { id } = await store.create();
  const events = Array.from({ length: 200 }, (_, i) => ({
    type: "message" as const,
    payload: { role: "user" as const, content: `event ${i} ${"x".repeat(i * 7)}` },
  }));
  await store.appendMany(id, events);
  const seen: number[] = [];
  const failures: string[] = [];
  // Readers report the intent of a rewind in progress (they cannot tell it from a crashed one).
  let pending = 0;
  const cutter = new Child("rewind-undo-loop.ts", [root, id, "20"]);
  children.push(cutter);
  await cutter.waitForLine((line) => line.startsWith("state"));
  const reading = (async () => {
    const rounds = () => cutter.lines.filter((line) => line.startsWith("state")).length / 2;
    while (rounds() < ROUNDS && cutter.process.exitCode === null) {
      try {
        seen.push(await store.head(id));
        const info = await store.get(id);
        seen.push(info!.lastSequence);
        if (info!.pendingRewind !== undefined) pending++;
      } catch (error) {
        failures.push(String(error));
      }
    }
  })();
  await reading;
  cutter.endInput();
  const run = await cutter.done();
  expect(run.stderr).toBe("");
  const had = new Set([200]);
  for (const line of run.stdout.split("\n")) {
    const [word, value] = line.split(" ");
    if (word === "target" || word === "state") had.add(Number(value));
  }
  expect(failures).toEqual([]);
  expect(seen.length).toBeGreaterThan(ROUNDS);
  expect(pending, "some reads fell inside a rewind").toBeGreaterThan(0);
  expect(seen.filter((sequence) => !had.has(sequence))).toEqual([]);
  await store.close();
});
