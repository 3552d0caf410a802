// Found by the links-inside property test (links-inside.property.test.ts, seed 2, 200 runs), shrunk to: a tool
// handed `n`, absent, makes it a folder holding `made.txt`; a later tool handed `n` removes it. A rewind to before
// both put `n/made.txt` back, and `n` with it: `n`'s closest record after the target is the first capture's
// (absent), but `n/made.txt` is named first by the second capture (the folder's listing), and that later record
// was taken for its state at the target. Failed with a change restoring `n/made.txt` (making `n` again).
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind } from "../../src/index.js";
import { smallSession } from "../helpers/small-session.js";

it("a folder a tool made and a later tool removed: a rewind to before both leaves nothing there", async () => {
  const s = await smallSession("agent-tape-made-removed-", { files: { "a.txt": "a\n" } });
  await s.tool("make_folder", ["n"], async () => {
    await mkdir(join(s.workspace, "n"));
    await writeFile(join(s.workspace, "n/made.txt"), "made\n");
  });
  await s.tool("delete", ["n"], () => rm(join(s.workspace, "n"), { recursive: true }));
  const report = await rewind(s.store, s.id, { toSequence: s.start, mode: "files" });
  expect(report.changes).toEqual([]); // the workspace is as it was at the start
  expect(await s.tree()).toEqual(s.before);
});
