// After an undo of a big cut the log holds one batch of up to 999,999 events, and every later reader
// used to hold all of it until its last line was read. These measure a reader in a process of its own (peak
// RSS, test/children/read-peak.ts) over a batch far bigger than the hold, against the same reader over as many
// events without a batch mark; then over an unfinished batch left by a writer killed with SIGKILL mid-write,
// which must stay invisible and be cut by the next lock holder (docs/ARCHITECTURE.md, "On disk", batches).
// The size is what they prove, and it takes a third of a minute: soak only (docs/testing.md, "Tiers"). The same
// batches' readers racing rewinds are in fs-big-batch-race.process.test.ts, and the next holder cutting an
// unfinished batch in test/session/append-many-crash.process.test.ts, both in `npm test`.
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendBatch, appendSingles, endOfLine, newSession } from "../helpers/big-batch.js";
import { Child, childrenKilledAfterEach, runChild } from "../helpers/children.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

// ~100 MB of lines: held whole, ~300 MB of events. The size is what this proves: with the hold taken away, a batch
// of 100,000 peaked at 1.33x the unmarked reader's ~125 MB, inside the bound; 300,000 is well past it.
const EVENTS = 300_000;
const BEFORE = 10;
/** A reader over a big batch may peak this much above the same reader over as many unmarked events. */
const RATIO = 1.5;
// Rounds: 3 kills in the soak run, the only one that runs this file (AGENT_TAPE_ROUNDS sets it, as everywhere:
// test/helpers/rounds.ts). One kill fails on a next holder that leaves the unfinished batch (docs/testing.md).
const KILL_ROUNDS = rounds(1, 3);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ReadPeak {
  count: number;
  last: number;
  peakRssMB: number;
}

async function readInChild(root: string, id: string): Promise<ReadPeak> {
  const run = await runChild("read-peak.ts", [root, id]);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split("\n").pop()!) as ReadPeak;
}

// The baseline both tests measure against: a session of EVENTS single lines, no batch mark, written once for the
// file in beforeAll (300,000 events through the real append path are a third of this file's time) and read by both.
const unmarked = { root: "", id: "singles" };
beforeAll(async () => {
  unmarked.root = await mkdtemp(join(tmpdir(), "agent-tape-big-batch-unmarked-"));
  const singles = await newSession(unmarked.root, unmarked.id);
  await appendSingles(singles.backend, singles.id, 1, EVENTS);
  await singles.backend.close();
}, 120_000);
afterAll(() => rm(unmarked.root, { recursive: true, force: true }));

describe("a reader's memory over a batch far bigger than the hold", () => {
  it(`reading ${EVENTS.toLocaleString("en")} events of one batch peaks within ${RATIO}x of as many unmarked`, {
    timeout: 300_000,
  }, async () => {
    const root = await tempDir("agent-tape-big-batch-memory-");
    const batched = await newSession(root, "batched");
    await appendBatch(batched.backend, batched.id, 1, EVENTS);
    await batched.backend.close();
    // Alternated, each in a fresh process; the lower of two peaks each, so one slow collection does not decide.
    const peaks = { batched: [] as number[], singles: [] as number[] };
    for (let round = 0; round < 2; round++) {
      for (const id of ["singles", "batched"] as const) {
        const read = await (id === "singles" ? readInChild(unmarked.root, unmarked.id) : readInChild(root, id));
        expect(read).toMatchObject({ count: EVENTS, last: EVENTS });
        peaks[id].push(read.peakRssMB);
      }
    }
    const ratio = Math.min(...peaks.batched) / Math.min(...peaks.singles);
    console.log(`peak RSS MB: batched ${peaks.batched.join(", ")}; unmarked ${peaks.singles.join(", ")}`);
    expect(ratio, `peak RSS MB: batched ${peaks.batched}, unmarked ${peaks.singles}`).toBeLessThanOrEqual(RATIO);
  });
});

describe(`a writer killed with SIGKILL inside a batch far bigger than the hold (${KILL_ROUNDS} rounds)`, () => {
  it("leaves a batch no reader sees, read in bounded memory, and the next lock holder cuts it", {
    timeout: 300_000,
  }, async () => {
    const root = await tempDir("agent-tape-big-batch-killed-");
    // The baseline: a reader of as many events as the batch could hold, none of them marked.
    const baseline = await readInChild(unmarked.root, unmarked.id);
    for (let round = 0; round < KILL_ROUNDS; round++) {
      const id = `killed-${round}`;
      const { backend } = await newSession(root, id);
      await appendSingles(backend, id, 1, BEFORE);
      await backend.close();
      const log = join(root, id, "events.jsonl");
      const kept = await endOfLine(log, BEFORE);
      const child = new Child("stream-appender.ts", [root, id, String(BEFORE + 1), String(BEFORE + EVENTS)]);
      children.push(child);
      await child.waitForLine((line) => line === "writing");
      // Killed once the batch is 50-90 MB in: 150k-270k events, far past the hold, short of its end.
      const growth = kept + (50 + Math.random() * 40) * 1024 * 1024;
      while ((await stat(log)).size < growth) await pause(2);
      child.kill("SIGKILL");
      const run = await child.done();
      children.splice(children.indexOf(child), 1);
      expect(run.signal, `round ${round}: ${run.stderr}`).toBe("SIGKILL");
      const left = (await stat(log)).size;
      expect(left, `round ${round}`).toBeGreaterThan(growth - 1);

      const read = await readInChild(root, id);
      expect(read, `round ${round}`).toMatchObject({ count: BEFORE, last: BEFORE });
      const ratio = read.peakRssMB / baseline.peakRssMB;
      console.log(
        `round ${round}: killed ${((left - kept) / 2 ** 20).toFixed(0)} MB into the batch; reader peak ` +
          `${read.peakRssMB.toFixed(0)} MB vs ${baseline.peakRssMB.toFixed(0)} MB reading ${EVENTS} unmarked events`,
      );
      expect(ratio, `round ${round}: ${read.peakRssMB} MB vs ${baseline.peakRssMB} MB`).toBeLessThanOrEqual(RATIO);

      const store = openStore({ root, lockStaleMs: 2000 });
      expect(await store.head(id)).toBe(BEFORE);
      expect((await store.readAll(id)).map((e) => e.sequence)).toEqual(Array.from({ length: BEFORE }, (_, i) => i + 1));
      const next = await store.append(id, { type: "message", payload: { role: "user", content: "after" } });
      expect(next.sequence).toBe(BEFORE + 1);
      expect(await store.head(id)).toBe(BEFORE + 1);
      await store.close();
      expect((await stat(log)).size).toBeLessThan(kept + 1024); // the batch is gone
    }
  });
});
