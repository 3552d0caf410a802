// Found by the links-inside property test (links-inside.property.test.ts, seed 3, 200 runs), shrunk to: `l` a
// link to the folder `a`; a command deletes `a/x.txt` (its after-state: absent); a tool handed `l` writes `l/x.txt`,
// which lands in `a`. The capture takes `a` (where `l` leads) as a complete listing, unknown until an after-state,
// but the after-state names only `l`, and `a/x.txt` stayed recorded absent: a rewind to before all of it was refused,
// "a/x.txt (created)", a file the session itself wrote.
import { chmod, mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

it("a tool handed a link to a folder writes in it a file a command deleted: the rewind, no conflict", async () => {
  const { workspace, store, checkpoints } = await workspaceWithStore("agent-tape-into-link-target-");
  await mkdir(join(workspace, "a"));
  await writeFile(join(workspace, "a/x.txt"), "x\n");
  await chmod(join(workspace, "a"), 0o700); // not the mode a new folder gets: the rewind changes `a`
  await symlink("a", join(workspace, "l"));
  const { id } = await store.create({ workspace });
  const start = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  const before = await byteTreeOf(workspace);
  await checkpoints.aroundCommand(id, { tool: "bash" }, () => rm(join(workspace, "a/x.txt")));
  await checkpoints.around(id, { tool: "write_into", paths: ["l"] }, () =>
    writeFile(join(workspace, "l/x.txt"), "written through the link\n"),
  );
  const after = await byteTreeOf(workspace);
  const report = await rewind(store, id, { toSequence: start, mode: "files" });
  expect(report.skipped).toEqual([]);
  expect(await byteTreeOf(workspace)).toEqual(before);
  await undoRewind(store, id);
  expect(await byteTreeOf(workspace)).toEqual(after);
});
