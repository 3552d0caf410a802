import { access, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Durability } from "../../src/index.js";
import { childrenKilledAfterEach, Child } from "../helpers/children.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach(); // registered last, so it runs first: children die before their folders go

// Rounds: 8 in `npm test`, 30 when soaking (test/helpers/rounds.ts). Acknowledging an append before its write
// (undone by hand to check) failed in round 1 of one run and passed all of 4 rounds in another: 8, not fewer.
const ROUNDS = rounds(8, 30);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a writer killed with SIGKILL mid-stream", () => {
  it("loses no append that had resolved, leaves a readable log, and the next append works", async () => {
    const root = await tempDir();
    const ackDir = await tempDir();
    // lockStaleMs 2000 (the minimum): a lock left by a killed writer is taken over within about 2 s.
    const open = () => openStore({ root, lockStaleMs: 2000, lockIdleMs: 0 });
    const setup = open();
    const { id } = await setup.create();
    await setup.close();
    const lockDir = join(root, id, "events.jsonl.lock");

    const durabilities: Durability[] = ["fsync", "batch", "none"];
    let last = 0; // highest sequence on disk after the previous kill
    let killedWhileAppending = 0;
    let lockLeftBehind = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const durability = durabilities[round % durabilities.length]!;
      // In batch mode several appends are in flight at once, so a kill can land inside a group commit.
      const inFlight = durability === "batch" ? 8 : 1;
      // Each writer is the next append after the previous kill: it must take over the dead writer's lock.
      const acks = join(ackDir, `acks-${round}.txt`);
      const child = new Child("crash-appender.ts", [root, id, String(round), durability, String(inFlight), acks]);
      children.push(child);
      if (round % 4 === 3) {
        // Sometimes at any moment at all: while starting, waiting for the stale lock or repairing the tail.
        await pause(Math.random() * 2_500);
      } else {
        await child.waitForLine(() => true);
        await pause(Math.random() * 300);
      }
      child.kill("SIGKILL");
      const run = await child.done();
      children.splice(children.indexOf(child), 1);
      expect(run.signal, `round ${round}: ${run.stderr}`).toBe("SIGKILL");
      const ackText = await readFile(acks, "utf8").catch(() => ""); // no file: killed before its first ack
      const resolved = ackText.split("\n").filter(Boolean).map(Number);
      if (resolved.length > 0) killedWhileAppending++;
      if (
        await access(lockDir).then(
          () => true,
          () => false,
        )
      )
        lockLeftBehind++;

      // The log reads (a torn last line, if any, is skipped) with no gap and no repeat...
      const reader = open();
      const onDisk = (await reader.readAll(id)).map((e) => e.sequence);
      await reader.close();
      expect(onDisk, `round ${round}`).toEqual(Array.from({ length: onDisk.length }, (_, i) => i + 1));
      // ...the writer's appends went on right after what the last one left, and every one that resolved is there...
      expect(resolved, `round ${round}`).toEqual(Array.from({ length: resolved.length }, (_, i) => last + 1 + i));
      expect(onDisk.length, `round ${round}`).toBeGreaterThanOrEqual(last + resolved.length);
      // ...and at most the appends in flight at the kill reached the disk without being reported.
      expect(onDisk.length - (last + resolved.length), `round ${round}`).toBeLessThanOrEqual(inFlight);
      last = onDisk.length;
    }
    // Most rounds must have killed a writer busy appending and holding the lock, or this test proves little.
    expect(killedWhileAppending).toBeGreaterThanOrEqual(ROUNDS / 2);
    expect(lockLeftBehind).toBeGreaterThanOrEqual(ROUNDS / 2);

    // And one more append from this process after the last kill.
    const store = open();
    try {
      const next = await store.append(id, {
        type: "message",
        payload: { role: "user", content: "after the last crash" },
      });
      expect(next.sequence).toBe(last + 1);
      expect((await store.readAll(id)).map((e) => e.sequence)).toEqual(
        Array.from({ length: last + 1 }, (_, i) => i + 1),
      );
    } finally {
      await store.close();
    }
  }, 90_000);
});
