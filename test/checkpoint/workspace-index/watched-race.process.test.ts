// Watched scans while another process changes the tree at random (test/children/tree-churner.ts):
// events arrive during scans, folders appear and vanish while being watched and listed. Whatever
// the interleaving, whenever the churner pauses and one more watched scan has run, a whole walk of
// the same session must find nothing the watched index does not already know. ROUNDS rounds of 25
// commands, the churner paused and the index checked after every other command.
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { CheckpointStore, type ScanReport } from "../../../src/index.js";
import { Child, childrenKilledAfterEach } from "../../helpers/children.js";
import { rounds } from "../../helpers/rounds.js";
import { openStore, tempDir } from "../../helpers/fixture.js";

const children = childrenKilledAfterEach();

// 3 rounds in `npm test`, 6 when soaking (test/helpers/rounds.ts).
const ROUNDS = rounds(3, 6);
const COMMANDS = 25;

it(`a whole walk after watched scans under churn finds nothing new (${ROUNDS} rounds)`, {
  timeout: 300_000,
}, async () => {
  let watchedChecks = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const base = await realpath(await tempDir("agent-tape-watch-race-"));
    const workspace = join(base, "ws");
    for (const folder of ["d0", "d1/e", "d2/e/f"]) await mkdir(join(workspace, folder), { recursive: true });
    for (let i = 0; i < 8; i++) await writeFile(join(workspace, `d0/c${i}.txt`), `seed ${i}\n`);
    const store = openStore({ root: join(base, "sessions") });
    const scans: ScanReport[] = [];
    const watched = new CheckpointStore(store, { workspaceIndex: { watch: true, onScan: (s) => scans.push(s) } });
    const { id } = await store.create({ workspace });
    await watched.aroundCommand(id, { tool: "bash" }, () => undefined);

    const churner = new Child("tree-churner.ts", [workspace, String(round + 1)]);
    children.push(churner);
    await churner.waitForLine((line) => line === "churning");
    const walkFindsNothingNew = async (when: string) => {
      await watched.aroundCommand(id, { tool: "bash" }, () => undefined);
      // Under load the churner can raise a burst the watcher will not vouch for: then it walks, as it should.
      if (scans.at(-1)!.walked === "changed folders") watchedChecks++;
      else expect(scans.at(-1)!.reason, when).toMatch(/burst/);
      const oracle: ScanReport[] = [];
      const walking = new CheckpointStore(store, { workspaceIndex: { onScan: (s) => oracle.push(s) } });
      await walking.beforeCommand(id, { tool: "bash" });
      expect(oracle, when).toMatchObject([{ phase: "before", walked: "whole", changed: 0 }]);
    };
    for (let i = 0; i < COMMANDS; i++) {
      await watched.aroundCommand(id, { tool: "bash" }, () =>
        writeFile(join(workspace, `d${i % 3}/cmd${i % 5}.txt`), `command ${round}.${i}\n`),
      );
      if (i % 2 === 1) {
        const paused = churner.waitForLine((line) => line.startsWith("paused"));
        churner.process.stdin!.write("pause\n");
        await paused;
        await walkFindsNothingNew(`round ${round}, command ${i}`);
        churner.process.stdin!.write("go\n");
      }
    }
    churner.endInput();
    const run = await churner.done();
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/stopped [1-9]/);
    await walkFindsNothingNew(`round ${round}, the end`);
    watched.close();
    await store.close();
  }
  // Most checks ran after a watched scan (a burst makes a few walk): the watched path is what was tested.
  expect(watchedChecks).toBeGreaterThan(ROUNDS * 2);
});
