// Found by the links-inside property test (links-inside.property.test.ts, seed 3, 200 runs, after the fixes of
// f28eb05), shrunk to: a command removes the folder `c` (its record of `c`: a folder, not a complete listing); a
// tool handed `c/new/deeper` makes it, and `c` and `c/new` on the way (its capture records `c` absent, the missing
// folder highest above). A rewind to before both put `c` back and left `c/new` in it: `c/new` is on no record, and
// the closest record of `c`, the command's, says nothing of what `c` held; the tool's later record of `c` as absent
// says it held nothing but what was recorded before.
import { execFileSync } from "node:child_process";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

it("a folder a command removed and a tool made again below: a rewind to before both adds nothing", async () => {
  const { workspace, store, checkpoints } = await workspaceWithStore("agent-tape-removed-made-below-");
  await mkdir(join(workspace, "c"));
  await writeFile(join(workspace, "c/w.txt"), "w\n");
  await chmod(join(workspace, "c"), 0o700);
  const { id } = await store.create({ workspace });
  const start = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  const before = await byteTreeOf(workspace);
  await checkpoints.aroundCommand(id, { tool: "bash" }, () => execFileSync("rm", ["-rf", "c"], { cwd: workspace }));
  await checkpoints.around(id, { tool: "make_dirs", paths: ["c/new/deeper"] }, () =>
    mkdir(join(workspace, "c/new/deeper"), { recursive: true }),
  );
  const after = await byteTreeOf(workspace);
  const report = await rewind(store, id, { toSequence: start, mode: "files" });
  expect(report.skipped).toEqual([]);
  expect(await byteTreeOf(workspace)).toEqual(before);
  await undoRewind(store, id);
  expect(await byteTreeOf(workspace)).toEqual(after);
});
