// Found by the links-inside property test (links-inside.property.test.ts, seed 2, 200 runs, after the fixes up to
// 8e509ff), shrunk to: `l` a link to the folder `b`; a command removes `b/sub`; a tool handed `l/sub/g.txt` runs
// (and writes nothing); a rewind to the start puts `b/sub` back; a second rewind to the start ("all", keepUndo 0)
// deleted `b/sub` and everything in it: the capture had recorded `l/sub` absent (the missing folder above the path
// handed, by the name below the link), and the rewind deleted it through the link.
import { execFileSync } from "node:child_process";
import { chmod, mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

it("a missing folder named below a link: a rewind to before it deletes nothing through the link", async () => {
  const { workspace, store, checkpoints } = await workspaceWithStore("agent-tape-rewind-all-below-link-");
  await mkdir(join(workspace, "b/sub"), { recursive: true });
  await writeFile(join(workspace, "b/sub/z.txt"), "z\n");
  await chmod(join(workspace, "b/sub"), 0o700);
  await symlink("b", join(workspace, "l"));
  const { id } = await store.create({ workspace });
  const start = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  const before = await byteTreeOf(workspace);
  await checkpoints.aroundCommand(id, { tool: "bash" }, () => execFileSync("rm", ["-rf", "b/sub"], { cwd: workspace }));
  await checkpoints.around(id, { tool: "delete", paths: ["l/sub/g.txt"] }, () =>
    rm(join(workspace, "l/sub/g.txt"), { force: true }),
  );
  await rewind(store, id, { toSequence: start, mode: "files" });
  expect(await byteTreeOf(workspace)).toEqual(before);
  await rewind(store, id, { toSequence: start, mode: "all", keepUndo: 0 });
  expect(await byteTreeOf(workspace)).toEqual(before);
});
