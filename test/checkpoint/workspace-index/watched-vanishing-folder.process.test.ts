// A folder that vanishes and comes back while a watched scan looks at it (test/children/folder-flipper.ts
// renames it away and back, over and over): the scan can find it listed in its parent, fail to watch it (gone),
// and then list it (back). Such a folder has no watch: a file written in it later raises no event, and only a
// whole walk would find it. Required: the watcher never takes a folder it could not watch for a watched one.
// ROUNDS rounds of flips under watched scans, each followed by a write inside the folder and a check against a walk.
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { CheckpointStore, type ScanReport } from "../../../src/index.js";
import { Child, childrenKilledAfterEach } from "../../helpers/children.js";
import { rounds } from "../../helpers/rounds.js";
import { openStore, tempDir } from "../../helpers/fixture.js";

const children = childrenKilledAfterEach();

// 8 rounds in `npm test`, 20 when soaking (test/helpers/rounds.ts).
const ROUNDS = rounds(8, 20);

it(`a folder found gone when watched and back when listed is still watched (${ROUNDS} rounds)`, {
  timeout: 300_000,
}, async () => {
  const base = await realpath(await tempDir("agent-tape-watch-vanish-"));
  const workspace = join(base, "ws");
  await mkdir(join(workspace, "d/x"), { recursive: true });
  await writeFile(join(workspace, "d/x/kept.txt"), "kept\n");
  const store = openStore({ root: join(base, "sessions") });
  const scans: ScanReport[] = [];
  const watched = new CheckpointStore(store, { workspaceIndex: { watch: true, onScan: (s) => scans.push(s) } });
  const { id } = await store.create({ workspace });
  await watched.aroundCommand(id, { tool: "bash" }, () => undefined);
  let watchedChecks = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const flipper = new Child("folder-flipper.ts", [join(workspace, "d/x"), join(workspace, "d/y")]);
      children.push(flipper);
      await flipper.waitForLine((line) => line === "flipping");
      for (let scan = 0; scan < 20; scan++) await watched.aroundCommand(id, { tool: "bash" }, () => undefined);
      flipper.endInput();
      const run = await flipper.done();
      expect(run.stdout).toMatch(/stopped [1-9]/);
      // Still now: two more scans take in where the flips left the folder (`d/x`), and leave the next one a
      // window of events (two rounds) without the flips', however slow the machine: no burst makes it walk.
      for (let still = 0; still < 2; still++) await watched.aroundCommand(id, { tool: "bash" }, () => undefined);
      await watched.aroundCommand(id, { tool: "bash" }, () =>
        writeFile(join(workspace, "d/x/kept.txt"), `round ${round}\n`),
      );
      if (scans.at(-1)!.walked === "changed folders") watchedChecks++;
      const oracle: ScanReport[] = [];
      const walking = new CheckpointStore(store, { workspaceIndex: { onScan: (s) => oracle.push(s) } });
      await walking.beforeCommand(id, { tool: "bash" });
      expect(oracle, `round ${round}`).toMatchObject([{ phase: "before", walked: "whole", changed: 0 }]);
    }
  } finally {
    watched.close();
    await store.close();
  }
  expect(watchedChecks).toBeGreaterThan(ROUNDS / 2);
});
