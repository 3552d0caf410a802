// Found by the links-inside property test (links-inside.property.test.ts, seed 2, 200 runs), shrunk to: a tool
// handed `n`, absent, makes it a folder holding `made.txt`; a later tool handed `n` removes it. A rewind to before
// both put `n/made.txt` back, and `n` with it: `n`'s closest record after the target is the first capture's
// (absent), but `n/made.txt` is named first by the second capture (the folder's listing), and that later record
// was taken for its state at the target. Failed with a change restoring `n/made.txt` (making `n` again).
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

it("a folder a tool made and a later tool removed: a rewind to before both leaves nothing there", async () => {
  const { workspace, store, checkpoints } = await workspaceWithStore("agent-tape-made-removed-");
  await writeFile(join(workspace, "a.txt"), "a\n");
  const { id } = await store.create({ workspace });
  const start = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  const before = await byteTreeOf(workspace);
  await checkpoints.around(id, { tool: "make_folder", paths: ["n"] }, async () => {
    await mkdir(join(workspace, "n"));
    await writeFile(join(workspace, "n/made.txt"), "made\n");
  });
  await checkpoints.around(id, { tool: "delete", paths: ["n"] }, () => rm(join(workspace, "n"), { recursive: true }));
  const report = await rewind(store, id, { toSequence: start, mode: "files" });
  expect(report.changes).toEqual([]); // the workspace is as it was at the start
  expect(await byteTreeOf(workspace)).toEqual(before);
});
