import { describe, expect, it } from "vitest";
import { forEachLimited } from "../../src/core/bounded-concurrency.js";
import { SLICE_MS } from "../../src/core/time-slices.js";

/** Holds the thread for `ms` of wall time: an item that is all synchronous work (a blob write, a cached read). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/**
 * Runs `forEachLimited` over items that are all synchronous work while a chain of setImmediate ticks counts the
 * turns of the event loop: how many items ran between two turns, at most.
 */
async function mostItemsInOneTurn(items: number, limit: number, itemMs: number): Promise<number> {
  let sinceTurn = 0;
  let most = 0;
  let running = true;
  const tick = () => {
    most = Math.max(most, sinceTurn);
    sinceTurn = 0;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  await forEachLimited(
    Array.from({ length: items }, (_, i) => i),
    limit,
    async () => {
      busy(itemMs);
      sinceTurn++;
    },
  );
  running = false;
  return Math.max(most, sinceTurn);
}

describe("time slices", () => {
  // The workers of one forEachLimited share a slice per turn of the event loop: each taking a slice of its own
  // held the loop for `limit` slices (a 1,000-file rewind's undo blobs: 8 x 5 ms a turn, bench "rewind 1000
  // files @10k: the main thread's longest stall"). Counted in items, not milliseconds: one slice's worth, plus
  // at most one item per worker that was under way when the slice ran out.
  it("lets the event loop turn once a slice's worth of items ran, however many workers run them", async () => {
    const itemMs = 1;
    const limit = 8;
    const most = await mostItemsInOneTurn(200, limit, itemMs);
    expect(most).toBeLessThanOrEqual(Math.ceil(SLICE_MS / itemMs) + limit);
  });

  it("still runs every item, and a single worker yields as before", async () => {
    let ran = 0;
    await forEachLimited(
      Array.from({ length: 50 }, (_, i) => i),
      1,
      async () => {
        busy(0.5);
        ran++;
      },
    );
    expect(ran).toBe(50);
    expect(await mostItemsInOneTurn(60, 1, 1)).toBeLessThanOrEqual(Math.ceil(SLICE_MS / 1) + 1);
  });
});
