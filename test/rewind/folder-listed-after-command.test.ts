// Found by the links-inside property test (links-inside.property.test.ts, seed 1, 200 runs), shrunk to: a command
// changes the mode of the folder `b` (its record of `b`: a folder, not a complete listing, as the shell capture's
// are); then a tool handed `l`, a link to `b`, writes `l/x.txt`, which lands in `b` (its capture takes `b` whole, a
// complete listing without `x.txt`). A rewind to before both left `b/x.txt`: the closest record of `b` after the
// target is the command's, which says nothing of what `b` held, and the later listing was not looked at.
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { expect, it } from "vitest";
import { rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

it("a folder a command changed, then listed whole by a capture: a rewind removes the file the tool made", async () => {
  const { workspace, store, checkpoints } = await workspaceWithStore("agent-tape-listed-after-command-");
  await mkdir(join(workspace, "b"));
  await writeFile(join(workspace, "b/y.txt"), "y\n");
  await symlink("b", join(workspace, "l"));
  const { id } = await store.create({ workspace });
  const start = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  const before = await byteTreeOf(workspace);
  await checkpoints.aroundCommand(id, { tool: "bash" }, () =>
    execFileSync("/bin/sh", ["-c", "chmod 750 b"], { cwd: workspace }),
  );
  await checkpoints.around(id, { tool: "write_into", paths: ["l"] }, () => writeFile(join(workspace, "l/x.txt"), ""));
  const after = await byteTreeOf(workspace);
  const report = await rewind(store, id, { toSequence: start, mode: "files" });
  expect(report.skipped).toEqual([]);
  expect(await byteTreeOf(workspace)).toEqual(before);
  await undoRewind(store, id);
  expect(await byteTreeOf(workspace)).toEqual(after);
});
