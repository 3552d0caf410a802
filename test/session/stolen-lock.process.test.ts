// A process whose lock is taken over as stale while it is stalled (event loop blocked by an
// execSync, or the whole process SIGSTOPped) must never write under the lost lock. Another writer appends
// throughout. Checked per round: no sequence acknowledged twice, no acknowledged event missing from the log,
// the log reads cleanly, and the stalled writer's failures are typed. Rounds: see ROUNDS.
import { access } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAgentTapeError } from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

const STALE_MS = 2000;
// 1 round of each in `npm test`, 4 when soaking (test/helpers/rounds.ts): each waits out lockStaleMs twice.
const ROUNDS = rounds(1, 4);

interface Acked {
  sequence: number;
  id: string;
}

async function stealRound(mode: "block" | "pause"): Promise<{ acked: number; errors: string[]; duplicates: number }> {
  const root = await tempDir();
  const setup = openStore({ root });
  const { id } = await setup.create();
  await setup.close();

  const stalled = new Child("stalled-appender.ts", [
    root,
    id,
    mode,
    "5",
    mode === "block" ? "200" : "400",
    `${STALE_MS}`,
  ]);
  children.push(stalled);
  await stalled.waitForLine((l) => l === "stalling");

  const other = openStore({ root, lockStaleMs: STALE_MS, lockWaitMs: 60_000, lockIdleMs: 0 });
  const mine: Acked[] = [];
  let stop = false;
  const writing = (async () => {
    for (let n = 0; !stop; n++) {
      const event = await other.append(id, { type: "message", payload: { role: "user", content: `b${n}` } });
      mine.push({ sequence: event.sequence, id: event.id });
    }
  })();
  if (mode === "pause") {
    // Stop it while it is busy appending (so likely mid-operation), long enough for the lock to go stale.
    await stalled.waitForLine((l) => l.startsWith("ack") && Number(l.split(" ")[1]) > 40);
    stalled.process.kill("SIGSTOP");
    await new Promise((r) => setTimeout(r, STALE_MS * 2.5));
    stalled.process.kill("SIGCONT");
  }
  const run = await stalled.done();
  stop = true;
  await writing;
  await other.close();
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);

  const theirs: Acked[] = [];
  const errors: string[] = [];
  for (const line of run.stdout.split("\n")) {
    const [kind, a, b] = line.split(" ");
    if (kind === "ack") theirs.push({ sequence: Number(a), id: b! });
    if (kind === "err") errors.push(a!);
  }
  const acked = [...theirs, ...mine];
  const sequences = acked.map((e) => e.sequence);
  const duplicates = sequences.length - new Set(sequences).size;
  console.log(`${mode}: ${duplicates} sequences acknowledged twice`);

  const summary =
    `${mode}: stalled acked ${theirs.length}, other acked ${mine.length}, sequences acked twice ${duplicates}, ` +
    `errors ${JSON.stringify(errors.slice(0, 3))} (${errors.length})`;
  const reader = openStore({ root });
  const log = await reader.readAll(id).finally(() => reader.close());
  const inLog = new Map(log.map((e) => [e.id, e.sequence]));
  const lost = acked.filter((e) => inLog.get(e.id) !== e.sequence);
  console.log(`${summary}, acked but lost ${lost.length}`);
  expect(duplicates).toBe(0);
  expect(lost).toEqual([]);
  for (const code of errors) expect(code).toBe("LOCK_COMPROMISED");
  return { acked: acked.length, errors, duplicates };
}

describe("a lock taken over from a stalled writer", () => {
  it(`blocked event loop (execSync past lockStaleMs): ${ROUNDS} rounds, nothing acked twice or lost`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { errors } = await stealRound("block");
      expect(errors.length).toBeGreaterThan(0); // the stalled writer is told, with a typed error
    }
  }, 120_000);

  it(`paused process (SIGSTOP/SIGCONT past lockStaleMs): ${ROUNDS} rounds, nothing acked twice or lost`, async () => {
    for (let round = 0; round < ROUNDS; round++) await stealRound("pause");
  }, 120_000);
});

describe("handing over a lease that lapsed", () => {
  it("does not remove the lock folder of the process that took the lock over", async () => {
    const root = await tempDir();
    const store = openStore({
      root,
      lockStaleMs: STALE_MS,
      lockIdleMs: 60_000,
      lockMaxHoldMs: 1000,
      lockWaitMs: 500,
    });
    try {
      const { id } = await store.create();
      await store.append(id, { type: "message", payload: { role: "user", content: "1" } });
      const taker = new Child("hold-lock.ts", [root, id]);
      children.push(taker);
      const held = taker.waitForLine((l) => l.startsWith("held"));
      // Block this process's event loop past lockStaleMs: the child takes the lock over meanwhile.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, STALE_MS * 3);
      // At once, before a timer could notice the loss: past lockMaxHoldMs, so this append first hands the
      // (lost) lease over, then waits for the child's lock.
      const appended = store.append(id, { type: "message", payload: { role: "user", content: "2" } });
      const error = await appended.then(
        () => undefined,
        (e: unknown) => e,
      );
      await held;
      const lockDir = join(root, id, "events.jsonl.lock");
      const folderKept = await access(lockDir).then(
        () => true,
        () => false,
      );
      const outcome = error ? String((error as Error).message) : "succeeded";
      console.log(`lapsed hand-over: append ${outcome}, lock folder kept ${folderKept}`);
      expect(folderKept).toBe(true);
      expect(isAgentTapeError(error)).toBe(true);
      taker.endInput();
      expect((await taker.done()).code).toBe(0);
    } finally {
      await store.close();
    }
  }, 60_000);
});
