import { createHash } from "node:crypto";
import { readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore } from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { put } from "../helpers/rewind-workspace.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// Two sessions, in two stores, on one folder, each rewound and undone by its own process at the same time
// (docs/ARCHITECTURE.md, "Workspace lock"). Rounds per process: AGENT_TAPE_ROUNDS, 15 by default (npm test);
// the soak tier runs 100 (rounds()).
const ROUNDS = rounds(15, 100);

const children = childrenKilledAfterEach();

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Session `name` in its own store, whose agent rewrote shared.txt to `wrote` (after event #1). */
async function sessionOn(base: string, workspace: string, name: string, wrote: string) {
  const root = join(base, `store-${name}`);
  const store = openStore({ root });
  try {
    const { id } = await store.create({ workspace });
    await store.append(id, { type: "message", payload: { role: "user", content: `edit, ${name}` } });
    await new CheckpointStore(store).around(id, { tool: "edit", paths: ["shared.txt"], callId: name }, async () => {
      await writeFile(join(workspace, "shared.txt"), wrote);
    });
    return { root, id };
  } finally {
    await store.close();
  }
}

describe("two sessions rewinding and undoing one folder at once (two processes)", () => {
  it(`lose no write: every content written is found by the next call or stays (${ROUNDS} rounds each)`, async () => {
    const base = await realpath(await tempDir("agent-tape-shared-ws-"));
    const workspace = join(base, "ws");
    await put(workspace, "shared.txt", "initial\n");
    const a = await sessionOn(base, workspace, "a", "written by a\n");
    const b = await sessionOn(base, workspace, "b", "written by b\n");
    const lockDir = join(base, "locks"); // the lock folder both processes share, away from the user's own

    const runs = [a, b].map((s) => {
      const child = new Child("shared-workspace-rewinder.ts", [s.root, s.id, String(ROUNDS)], {
        AGENT_TAPE_LOCK_DIR: lockDir,
      });
      children.push(child);
      child.endInput();
      return child.done();
    });
    const done = await Promise.all(runs);
    for (const run of done) expect(run.stderr, run.stderr).toBe("");
    for (const run of done) expect(run.stdout).toContain(`done ${ROUNDS}`);

    // Each write is found (as the before-state kept for undo) by exactly one later call, or is what is left.
    const written = new Map<string, number>([[sha256("written by b\n"), 1]]); // b's edit came last
    const found = new Map<string, number>([[sha256(await readFile(join(workspace, "shared.txt"), "utf8")), 1]]);
    const add = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
    let calls = 0;
    for (const run of done)
      for (const line of run.stdout.split("\n")) {
        const [word, before, after] = line.split(" ");
        if (word !== "op") continue;
        calls++;
        add(found, before!);
        add(written, after!);
      }
    expect(calls).toBeGreaterThan(0); // a call that finds the file as it wants it writes nothing
    const lost = [...written].filter(([hash, n]) => (found.get(hash) ?? 0) < n);
    expect(lost, "writes no later call found and that are not the final content").toEqual([]);
    expect(Object.fromEntries(found)).toEqual(Object.fromEntries(written));
  }, 240_000);
});
