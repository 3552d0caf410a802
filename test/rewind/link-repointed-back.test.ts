// Found by the links-inside property test (links-inside.property.test.ts, seed 1249210675, after the fixes up to
// e4c19d4), shrunk to: `l` a link to the folder `a`; a tool handed `l/f.txt` writes it (in `a/f.txt`); a command
// re-points `l` to `c`; a rewind ("all", keepUndo 0) to after the tool points `l` at `a` again. A second rewind, to
// before the tool, was refused, "l/f.txt (created)": setting `l` to a link took every path the tape recorded below
// it to absent, though below a link a name is only a second name of what the link leads to (`a/f.txt`, there all
// along).
import { execFileSync } from "node:child_process";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

it("a link re-pointed by a command and back by a rewind: a rewind to before a tool wrote below it", async () => {
  const { workspace, store, checkpoints } = await workspaceWithStore("agent-tape-link-repointed-back-");
  await mkdir(join(workspace, "a"));
  await mkdir(join(workspace, "c"));
  await symlink("a", join(workspace, "l"));
  const { id } = await store.create({ workspace });
  const start = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  const before = await byteTreeOf(workspace);
  await checkpoints.around(id, { tool: "write_file", paths: ["l/f.txt"] }, () =>
    writeFile(join(workspace, "l/f.txt"), "through the link\n"),
  );
  const written = (await store.get(id))!.lastSequence;
  await checkpoints.aroundCommand(id, { tool: "bash" }, () =>
    execFileSync("/bin/sh", ["-c", "rm l && ln -s c l"], { cwd: workspace }),
  );
  await rewind(store, id, { toSequence: written, mode: "all", keepUndo: 0 });
  const after = await byteTreeOf(workspace);
  const report = await rewind(store, id, { toSequence: start, mode: "files" });
  expect(report.skipped).toEqual([]);
  expect(await byteTreeOf(workspace)).toEqual(before);
  await undoRewind(store, id);
  expect(await byteTreeOf(workspace)).toEqual(after);
});
