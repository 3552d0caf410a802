import { access } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SessionStore, type Durability } from "../../src/index.js";
import { Child } from "../helpers/children.js";
import { TempRoots } from "../helpers/temp-root.js";

const temps = new TempRoots();
const children: Child[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    child.kill();
    await child.done();
  }
  await temps.removeAll();
});

const ROUNDS = 12;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a writer killed with SIGKILL mid-stream", () => {
  it("loses no append that had resolved, leaves a readable log, and the next append works", async () => {
    const root = await temps.make();
    // lockStaleMs 2000 (the minimum): a lock left by the killed child is taken over within about 2 s.
    const open = () => new SessionStore({ root, lockStaleMs: 2000, lockIdleMs: 0 });
    const setup = open();
    const { id } = await setup.create();
    await setup.close();

    const durabilities: Durability[] = ["fsync", "batch", "none"];
    let expectedLast = 0;
    let killedWhileAppending = 0;
    let lockLeftBehind = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const durability = durabilities[round % durabilities.length]!;
      const child = new Child("crash-appender.ts", [root, id, String(round), durability]);
      children.push(child);
      if (round % 4 === 3) {
        // Sometimes at any moment at all: while starting, taking over the lock or repairing the tail.
        await pause(Math.random() * 700);
      } else {
        await child.waitForLine(() => true);
        await pause(Math.random() * 300);
      }
      child.kill("SIGKILL");
      const run = await child.done();
      children.splice(children.indexOf(child), 1);
      expect(run.signal, `round ${round}: ${run.stderr}`).toBe("SIGKILL");
      const resolved = run.stdout.split("\n").filter(Boolean).map(Number);
      if (resolved.length > 0) killedWhileAppending++;
      const lockDir = join(root, id, "events.jsonl.lock");
      if (await access(lockDir).then(() => true, () => false)) lockLeftBehind++;

      const store = open();
      try {
        // The log reads (a torn last line, if any, is skipped) and holds every resolved append.
        const onDisk = (await store.readAll(id)).map((e) => e.sequence);
        expect(onDisk, `round ${round}`).toEqual(Array.from({ length: onDisk.length }, (_, i) => i + 1));
        const last = onDisk.length;
        for (const sequence of resolved) expect(sequence, `round ${round}`).toBeLessThanOrEqual(last);
        // Resolved appends are the child's own, numbered after what was there when it started.
        expect(resolved, `round ${round}`).toEqual(Array.from({ length: resolved.length }, (_, i) => expectedLast + 1 + i));
        // At most the one append in flight at the kill made it to disk without being reported.
        expect(last - (expectedLast + resolved.length), `round ${round}`).toBeLessThanOrEqual(1);
        expect(last).toBeGreaterThanOrEqual(expectedLast);

        // The next append takes over the dead child's lock, repairs the tail, and follows on.
        const next = await store.append(id, { type: "message", payload: { role: "user", content: `after round ${round}` } });
        expect(next.sequence, `round ${round}`).toBe(last + 1);
        expectedLast = next.sequence;
      } finally {
        await store.close();
      }
    }
    // Most rounds must have killed a child that was busy appending, or this test proves little.
    expect(killedWhileAppending).toBeGreaterThanOrEqual(ROUNDS / 2);
    expect(lockLeftBehind).toBeGreaterThanOrEqual(ROUNDS / 2);

    const store = open();
    try {
      const events = await store.readAll(id);
      expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
      expect(events.filter((e) => (e.payload as { content: string }).content.startsWith("after round"))).toHaveLength(ROUNDS);
    } finally {
      await store.close();
    }
  }, 90_000);
});
