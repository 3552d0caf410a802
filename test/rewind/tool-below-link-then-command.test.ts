// Found by the links-inside property test (links-inside.property.test.ts, seed 2, 200 runs, after the fixes of
// f28eb05), shrunk to: `l` a link to the folder `a`; a tool handed `l/x.txt` writes it (in `a/x.txt`); a command
// deletes `a/x.txt` (through the link: `rm -rf l/*`), which the shell capture records by its real path. A rewind to
// before both was refused, "l/x.txt (deleted)": the tool's after-state recorded the name it was handed, below a
// link, and nothing the command recorded says that name changed. The place it lands, `a/x.txt`, has an
// after-state of its own: it is the one checked.
import { execFileSync } from "node:child_process";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { workspaceWithStore } from "../helpers/fixture.js";

it("a file a tool wrote below a link, deleted by a command by its real path: the rewind, no conflict", async () => {
  const { workspace, store, checkpoints } = await workspaceWithStore("agent-tape-below-link-command-");
  await mkdir(join(workspace, "a"));
  await writeFile(join(workspace, "a/x.txt"), "x\n");
  await symlink("a", join(workspace, "l"));
  const { id } = await store.create({ workspace });
  const start = (await store.append(id, { type: "message", payload: { role: "user", content: "start" } })).sequence;
  const before = await byteTreeOf(workspace);
  await checkpoints.around(id, { tool: "write_file", paths: ["l/x.txt"] }, () =>
    writeFile(join(workspace, "l/x.txt"), "through the link\n"),
  );
  await checkpoints.aroundCommand(id, { tool: "bash" }, () =>
    execFileSync("/bin/sh", ["-c", "rm -rf l/*"], { cwd: workspace }),
  );
  const after = await byteTreeOf(workspace);
  const report = await rewind(store, id, { toSequence: start, mode: "files" });
  expect(report.skipped).toEqual([]);
  expect(await byteTreeOf(workspace)).toEqual(before);
  await undoRewind(store, id);
  expect(await byteTreeOf(workspace)).toEqual(after);
});
