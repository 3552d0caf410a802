// Found by the links-inside property test (links-inside.property.test.ts, seed 2, 200 runs, after the fixes up to
// 669b8ad), shrunk to: `l` a link to the folder `b`; a command removes `b/sub`; a tool handed `l/sub/g.txt` runs
// (and writes nothing); a rewind to the start puts `b/sub` back; a second one, to after the command, was refused,
// "l/sub (created)". The capture
// records `l/sub` as the missing folder above the path handed, a second name (below the link) of `b/sub`, and the
// after-state recorded it absent by that name: the rewind that put `b/sub` back wrote it by its own.
import { execFileSync } from "node:child_process";
import { chmod, mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

it("the missing folder above a path handed below a link, put back by its own name: a rewind, no conflict", async () => {
  const { workspace, store, checkpoints } = await workspaceWithStore("agent-tape-missing-below-link-");
  await mkdir(join(workspace, "b/sub"), { recursive: true });
  await writeFile(join(workspace, "b/sub/z.txt"), "z\n");
  await chmod(join(workspace, "b/sub"), 0o700);
  await symlink("b", join(workspace, "l"));
  const { id } = await store.create({ workspace });
  const start = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  const before = await byteTreeOf(workspace);
  await checkpoints.aroundCommand(id, { tool: "bash" }, () => execFileSync("rm", ["-rf", "b/sub"], { cwd: workspace }));
  const afterCommand = (await store.get(id))!.lastSequence;
  await checkpoints.around(id, { tool: "delete", paths: ["l/sub/g.txt"] }, () =>
    rm(join(workspace, "l/sub/g.txt"), { force: true }),
  );
  const removed = await byteTreeOf(workspace);
  await rewind(store, id, { toSequence: start, mode: "files" });
  expect(await byteTreeOf(workspace)).toEqual(before);
  const report = await rewind(store, id, { toSequence: afterCommand, mode: "all", keepUndo: 0 });
  expect(report.skipped).toEqual([]);
  expect(await byteTreeOf(workspace)).toEqual(removed);
});
