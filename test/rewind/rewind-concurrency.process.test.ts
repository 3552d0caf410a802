import { realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, rewind, type StoredEvent } from "../../src/index.js";
import { childrenKilledAfterEach, Child } from "../helpers/children.js";
import { put, workspaceTree } from "../helpers/rewind-workspace.js";
import { archivedEventsOf } from "../helpers/stored-events.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach(); // registered last, so it runs first: children die before their folders go

const FILES = 300; // a rewind long enough that the appender has to wait for it
const path = (i: number) => `src/dir-${i % 10}/file-${i}.txt`;
const tickOf = (event: StoredEvent) => {
  const match =
    event.type === "message" ? /^tick (\d+)$/.exec(String((event.payload as { content: unknown }).content)) : null;
  return match ? Number(match[1]) : undefined;
};

/** Resolves once the child has printed `count` more lines than it had when called. */
async function moreLines(child: Child, count: number): Promise<void> {
  const target = child.stdout.split("\n").length - 1 + count;
  while (child.stdout.split("\n").length - 1 < target) await child.waitForLine(() => true);
}

describe("a rewind while another process appends", () => {
  it("lands the other process's events before the rewind or after its marker, never between; loses none", async () => {
    const base = await realpath(await tempDir("agent-tape-rewind-concurrency-"));
    const root = join(base, "sessions");
    const workspace = join(base, "ws");
    for (let i = 0; i < FILES; i++) await put(workspace, path(i), `at the target ${i}\n`.repeat(100));
    const store = openStore({ root });
    try {
      const checkpoints = new CheckpointStore(store);
      const { id } = await store.create({ workspace });
      const target = (await store.append(id, { type: "message", payload: { role: "user", content: "the target" } }))
        .sequence;
      const treeAtTarget = await workspaceTree(workspace);
      const paths = Array.from({ length: FILES }, (_, i) => path(i));
      await checkpoints.around(id, { tool: "rewrite", paths }, async () => {
        for (let i = 0; i < FILES; i++) await writeFile(join(workspace, path(i)), `after ${i}\n`);
      });
      const own = await store.readAll(id);
      const ownAfterTarget = own.filter((e) => e.sequence > target);

      const appender = new Child("rewind-appender.ts", [root, id]);
      children.push(appender);
      await moreLines(appender, 20); // appending in earnest, and holding the lock between appends
      const report = await rewind(store, id, { toSequence: target });
      await moreLines(appender, 20);
      appender.endInput();
      const run = await appender.done();
      expect(run.code, run.stderr).toBe(0);

      const acked = run.stdout
        .trim()
        .split("\n")
        .filter((line) => line !== "done")
        .map((line) => line.split(" ").map(Number) as [number, number]);
      const marker = report.markerSequence!;
      const events = await store.readAll(id);
      const archive = { events: await archivedEventsOf(store.backend, id, `rewind-archive-${marker}`) };

      // The log: the target's prefix, the marker, then only ticks, numbered on from the marker.
      const markerAt = events.findIndex((e) => e.sequence === marker);
      expect(events[markerAt]?.type).toBe("session_rewind");
      expect(events.slice(0, markerAt)).toEqual(own.filter((e) => e.sequence <= target));
      const after = events.slice(markerAt + 1);
      expect(after.map((e) => e.sequence)).toEqual(after.map((_, i) => marker + 1 + i));
      expect(after.every((e) => tickOf(e) !== undefined)).toBe(true);

      // What the rewind removed: our own events after the target, then the ticks that came before it.
      const removedTicks = archive.events.filter((e) => tickOf(e) !== undefined);
      expect(archive.events.filter((e) => tickOf(e) === undefined)).toEqual(ownAfterTarget);
      expect(report.eventsRemoved).toBe(archive.events.length);
      expect(removedTicks.length).toBeGreaterThanOrEqual(20);
      expect(after.length).toBeGreaterThanOrEqual(20);

      // Every acknowledged tick is exactly once either before the rewind (removed by it) or after the marker.
      const before = removedTicks.map((e) => [tickOf(e)!, e.sequence]);
      const later = after.map((e) => [tickOf(e)!, e.sequence]);
      expect([...before, ...later]).toEqual(acked);
      expect(acked.map(([n]) => n)).toEqual(acked.map((_, i) => i));
      expect(Math.max(...before.map(([, s]) => s!))).toBeLessThan(marker);

      expect(await workspaceTree(workspace)).toEqual(treeAtTarget);
    } finally {
      await store.close();
    }
  }, 120_000);
});
