// Byte-range archives across kill -9 (docs/ARCHITECTURE.md, "Rewind intent"): a rewind killed while
// it copies the part of the log it cuts, and an undo killed while it streams those events back as one batch,
// at random moments, in real child processes. The next writer must find the rewind (or the undo) done, every
// event exactly once, and the archive whole: what the undo puts back is what the rewind cut.
import { randomInt } from "node:crypto";
import { mkdir, readdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RewindPayload, StoredEvent } from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { archivedEventsOf } from "../helpers/stored-events.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

const EVENTS = 30_000;
// 1 round of each in `npm test` (a kill at a random moment: the soak run's 6 are what find the rare ones), 6 when
// soaking (test/helpers/rounds.ts).
const ROUNDS = rounds(1, 6);
const PROBE = "opened after the crash";

/** A session of EVENTS messages (a ~9 MB log) in a workspace with no files. */
async function tape(): Promise<{ root: string; workspace: string; id: string; events: StoredEvent[] }> {
  const base = await realpath(await tempDir("agent-tape-archive-crash-"));
  const root = join(base, "sessions");
  const workspace = join(base, "ws");
  await mkdir(workspace);
  const store = openStore({ root, durability: "none" });
  try {
    const { id } = await store.create({ workspace });
    for (let first = 0; first < EVENTS; first += 1000)
      await store.appendMany(
        id,
        Array.from({ length: 1000 }, (_, i) => ({
          type: "message" as const,
          payload: { role: "assistant" as const, content: `event ${first + i}: ${"é ✓ ".repeat(60)}` },
        })),
      );
    return { root, workspace, id, events: await store.readAll(id) };
  } finally {
    await store.close();
  }
}

function start(t: { root: string; workspace: string; id: string }, operation: "rewind" | "undo"): Child {
  const child = new Child("rewind-until.ts", [t.root, t.id, t.workspace, operation, "1", "none", "1"]);
  children.push(child);
  return child;
}

/** Kills the child a random moment after it printed `line`; says whether it had finished by then. */
async function killSomewhereAfter(child: Child, line: string, withinMs: number): Promise<boolean> {
  await child.waitForLine((l) => l === line);
  await new Promise((resolve) => setTimeout(resolve, randomInt(withinMs + 1)));
  const finished = child.stdout.includes("done ");
  child.kill("SIGKILL");
  await child.done();
  return finished;
}

/** The session as the next writer leaves it: a reader first (it sees no part of a batch), then an append. */
async function afterCrash(t: { root: string; id: string }, shapes: readonly (readonly number[])[]) {
  const store = openStore({ root: t.root, lockStaleMs: 4000 });
  try {
    const read = (await store.readAll(t.id)).length;
    expect(shapes.map((s) => s.length)).toContain(read); // whole states only, never half a batch
    await store.append(t.id, { type: "message", payload: { role: "user", content: PROBE } });
    const events = (await store.readAll(t.id)).filter((e) => (e.payload as { content?: unknown }).content !== PROBE);
    const records = (await readdir(join(t.root, t.id, "records"))).filter((n) => !n.startsWith("blobs-in-flight"));
    return { events, records };
  } finally {
    await store.close();
  }
}

const without = ({ sequence: _s, ...rest }: StoredEvent) => rest;

describe("byte-range archives across kill -9", () => {
  it(`a rewind killed while copying the part it cuts (${ROUNDS} rounds): finished, its archive whole`, {
    timeout: 240_000,
  }, async () => {
    const landed: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const t = await tape();
      const finished = await killSomewhereAfter(start(t, "rewind"), "files-restored", 80);
      landed.push(finished ? "after the end" : "inside");
      const { events, records } = await afterCrash(t, [t.events.map((e) => e.sequence), [1], [1, EVENTS + 1]]);

      expect(events.map((e) => e.sequence)).toEqual([1, EVENTS + 1]);
      const marker = events[1]!.payload as RewindPayload;
      const name = `rewind-archive-${EVENTS + 1}`;
      expect(records.sort()).toEqual([`${name}.json`, `${name}.jsonl`]);
      expect(marker.undo?.archiveLog?.events).toBe(EVENTS - 1);
      const store = openStore({ root: t.root });
      try {
        expect((await archivedEventsOf(store.backend, t.id, name)).map(without)).toEqual(
          t.events.slice(1).map(without),
        );
      } finally {
        await store.close();
      }
    }
    console.log(`rewind killed while copying: ${landed.join(", ")}`);
  });

  it(`an undo killed while streaming the events back (${ROUNDS} rounds): the next writer puts back each once`, {
    timeout: 240_000,
  }, async () => {
    const landed: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const t = await tape();
      const rewound = start(t, "rewind");
      await rewound.waitForLine((l) => l.startsWith("done "));
      await rewound.done();
      const finished = await killSomewhereAfter(start(t, "undo"), "blobs-pruned", 600);
      landed.push(finished ? "after the end" : "inside");
      const undone = [1, EVENTS + 1, ...t.events.slice(1).map((_, i) => EVENTS + 2 + i), 2 * EVENTS + 1];
      const { events, records } = await afterCrash(t, [[1, EVENTS + 1], undone]);

      expect(events.map((e) => e.sequence)).toEqual(undone);
      expect(events.slice(2, -1).map(without)).toEqual(t.events.slice(1).map(without));
      expect(t.events.slice(1).map((e) => e.sequence)).toEqual(t.events.slice(1).map((_, i) => 2 + i));
      expect((events.at(-1)!.payload as RewindPayload).reappendedRanges).toEqual([[2, t.events.at(-1)!.sequence]]);
      expect(records).toEqual([]);
    }
    console.log(`undo killed while appending: ${landed.join(", ")}`);
  });
});
