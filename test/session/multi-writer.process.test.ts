import { describe, expect, it } from "vitest";
import type { Durability } from "../../src/index.js";
import { childrenKilledAfterEach, runChild, Child } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach(); // registered last, so it runs first: children die before their folders go

const WRITERS = 4;
const EACH = 300;
// With group commit, 300 appends of one writer alone take ~22 ms, barely past the 15 ms hold: too few for the
// holders to be made to hand over while the others wait (what makes the test about concurrency at all). More each.
const EACH_BATCHED = 1200;

async function writeFromFourProcesses(durability: Durability, concurrency: number, each = EACH) {
  const root = await tempDir();
  const store = openStore({ root });
  const { id } = await store.create();
  await store.close();

  const writers = Array.from({ length: WRITERS }, (_, w) => {
    // A short hold so each lease is handed over many times while the others wait.
    const child = new Child("append-writer.ts", [
      root,
      id,
      `w${w}`,
      String(each),
      durability,
      "15",
      String(concurrency),
    ]);
    children.push(child);
    return child;
  });
  await Promise.all(writers.map((w) => w.waitForLine((l) => l === "ready")));
  for (const w of writers) w.endInput();
  const runs = await Promise.all(writers.map((w) => w.done()));
  for (const run of runs) {
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`done ${each}`);
  }

  const reader = openStore({ root });
  try {
    return await reader.readAll(id);
  } finally {
    await reader.close();
  }
}

function checkLog(events: { sequence: number; id: string; payload: unknown }[], each = EACH) {
  // None lost, none duplicated, strictly increasing, and nothing else in between.
  expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: WRITERS * each }, (_, i) => i + 1));
  expect(new Set(events.map((e) => e.id)).size).toBe(WRITERS * each);
  const ticks = events.map((e) => e.payload as { writer: string; n: number });
  for (let w = 0; w < WRITERS; w++) {
    const mine = ticks.filter((t) => t.writer === `w${w}`).map((t) => t.n);
    expect(mine).toEqual(Array.from({ length: each }, (_, i) => i));
  }
  // The writers did take turns: this is what makes the test about concurrency at all.
  let turns = 0;
  for (let i = 1; i < ticks.length; i++) if (ticks[i]!.writer !== ticks[i - 1]!.writer) turns++;
  expect(turns).toBeGreaterThanOrEqual(WRITERS);
}

describe("four processes appending to one session at once", () => {
  it("lose, duplicate and reorder nothing (durability fsync)", async () => {
    checkLog(await writeFromFourProcesses("fsync", 1));
  }, 60_000);

  it("lose, duplicate and reorder nothing with group commit (durability batch, 8 appends in flight each)", async () => {
    checkLog(await writeFromFourProcesses("batch", 8, EACH_BATCHED), EACH_BATCHED);
  }, 60_000);
});

describe("an open but idle store", () => {
  it("lets go of the session lock after lockIdleMs, so another process can write", async () => {
    const root = await tempDir();
    const idle = openStore({ root, lockIdleMs: 100 });
    const greedy = openStore({ root, lockIdleMs: 60_000 });
    try {
      const a = await idle.create({ id: "idle" });
      const b = await greedy.create({ id: "greedy" });
      await idle.append(a.id, { type: "message", payload: { role: "user", content: "then waits for its model" } });
      await greedy.append(b.id, { type: "message", payload: { role: "user", content: "keeps its lease" } });

      // Both stores stay open. Another process gets the idle store's session...
      const fromOutside = await runChild("append-once.ts", [root, a.id, "2000", "second terminal"]);
      expect(fromOutside.stderr).toBe("");
      expect(JSON.parse(fromOutside.stdout)).toEqual({ ok: true, sequence: 2 });
      // ...but not the session of a store told to keep its lease: the test can tell the two apart.
      const blocked = await runChild("append-once.ts", [root, b.id, "500", "second terminal"]);
      expect(JSON.parse(blocked.stdout)).toEqual({ ok: false, code: "LOCKED" });

      // The idle store takes the lock again and numbers after the other process's event.
      const next = await idle.append(a.id, { type: "message", payload: { role: "user", content: "back" } });
      expect(next.sequence).toBe(3);
      expect((await idle.readAll(a.id)).map((e) => (e.payload as { content: string }).content)).toEqual([
        "then waits for its model",
        "second terminal",
        "back",
      ]);
    } finally {
      await idle.close();
      await greedy.close();
    }
  }, 30_000);
});
