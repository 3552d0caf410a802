// Found by the links-inside property test (links-inside.property.test.ts, seed 1, 200 runs), shrunk to: a tool
// removes the folder `b` (its after-state records `b` absent, so everything recorded below it, `b/sub` too, is
// absent on the tape), then a tool writes `b/sub/new`, making `b` and `b/sub` again on the way. The capture
// records `b` as the missing folder above it (unknown until an after-state), but `b/sub` stayed recorded absent
// and the after-state names only `b/sub/new`: a rewind to before both was refused, "b/sub (created)", a folder
// the session itself made. (With `b/sub` at the mode a new folder gets, 755 here, the rewind had nothing to change
// there and checked nothing: the folders are 700.)
import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { smallSession } from "../helpers/small-session.js";

it("a folder a tool removed, made again below by a tool: the rewind puts it back, no conflict", async () => {
  const s = await smallSession("agent-tape-remade-folder-", {
    files: { "b/y.txt": "y\n", "b/sub/z.txt": "z\n" },
    modes: { "b/sub": 0o700, b: 0o700 }, // not the mode mkdir gives: the rewind must change both
  });
  await s.tool("delete", ["b"], () => rm(join(s.workspace, "b"), { recursive: true }));
  await s.tool("make_dirs", ["b/sub/new"], () => mkdir(join(s.workspace, "b/sub/new"), { recursive: true }));
  await s.rewindThenUndo();
  expect(await readdir(join(s.workspace, "b/sub"))).toEqual(["new"]);
});
