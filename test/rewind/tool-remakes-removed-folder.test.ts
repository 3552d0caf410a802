// Found by the links-inside property test (links-inside.property.test.ts, seed 1, 200 runs), shrunk to: a tool
// removes the folder `b` (its after-state records `b` absent, so everything recorded below it, `b/sub` too, is
// absent on the tape), then a tool writes `b/sub/new`, making `b` and `b/sub` again on the way. The capture
// records `b` as the missing folder above it (unknown until an after-state), but `b/sub` stayed recorded absent
// and the after-state names only `b/sub/new`: a rewind to before both was refused, "b/sub (created)", a folder
// the session itself made. (With `b/sub` at the mode a new folder gets, 755 here, the rewind had nothing to change
// there and checked nothing: the folders are 700.)
import { chmod, mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

it("a folder a tool removed, made again below by a tool: the rewind puts it back, no conflict", async () => {
  const { workspace, store, checkpoints } = await workspaceWithStore("agent-tape-remade-folder-");
  await mkdir(join(workspace, "b/sub"), { recursive: true });
  await writeFile(join(workspace, "b/y.txt"), "y\n");
  await writeFile(join(workspace, "b/sub/z.txt"), "z\n");
  await chmod(join(workspace, "b/sub"), 0o700);
  await chmod(join(workspace, "b"), 0o700); // not the mode mkdir gives: the rewind must change both
  const { id } = await store.create({ workspace });
  const start = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  const before = await byteTreeOf(workspace);
  await checkpoints.around(id, { tool: "delete", paths: ["b"] }, () => rm(join(workspace, "b"), { recursive: true }));
  await checkpoints.around(id, { tool: "make_dirs", paths: ["b/sub/new"] }, () =>
    mkdir(join(workspace, "b/sub/new"), { recursive: true }),
  );
  const after = await byteTreeOf(workspace);
  const report = await rewind(store, id, { toSequence: start, mode: "files" });
  expect(report.skipped).toEqual([]);
  expect(await byteTreeOf(workspace)).toEqual(before);
  await undoRewind(store, id);
  expect(await byteTreeOf(workspace)).toEqual(after);
  expect(await readdir(join(workspace, "b/sub"))).toEqual(["new"]);
});
