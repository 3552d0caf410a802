import { execFileSync } from "node:child_process";
import { mkdir, realpath, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind } from "../../src/index.js";
import { put, workspaceTree } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// Every kind change of one path — file, folder, symlink, absent, each into each — at the top and two folders
// down, made by a shell command (recorded by the workspace index) or by a tool (`around`): the rewind to before
// it puts the whole tree back exactly, with no conflict (nobody but the session changed anything), and the undo
// gives back the tree the change left. An exhaustive table: 4 x 4 kinds x 2 depths x 2 ways = 60 cases (absent
// into absent changes nothing).

const KINDS = ["file", "folder", "symlink", "absent"] as const;
type Kind = (typeof KINDS)[number];
const DEPTHS = [0, 2] as const;
const WAYS = ["command", "tool"] as const;

/**
 * Makes `kind` at `path`; `other` gives the second form of the same kind (for a change that keeps the kind).
 * The symlink leads to `twin`, a folder equal to the folder form: a folder swapped for a link to an equal one.
 */
async function make(workspace: string, path: string, kind: Kind, other: boolean): Promise<void> {
  const up = "../".repeat(path.split("/").length - 1);
  switch (kind) {
    case "file":
      return put(workspace, path, other ? "changed\n" : "original\n");
    case "folder":
      await mkdir(join(workspace, path, "sub"), { recursive: true });
      await put(workspace, `${path}/inner.txt`, other ? "inner, changed\n" : "inner\n");
      await put(workspace, `${path}/sub/deep.txt`, "deep\n");
      if (other) await put(workspace, `${path}/added.txt`, "added\n");
      return;
    case "symlink":
      return symlink(other ? `${up}elsewhere.txt` : `${up}twin`, join(workspace, path));
    case "absent":
      return;
  }
}

async function setUp(from: Kind, path: string) {
  const base = await realpath(await tempDir("agent-tape-kinds-"));
  const workspace = join(base, "ws");
  await mkdir(workspace);
  await make(workspace, "twin", "folder", false);
  await put(workspace, "elsewhere.txt", "elsewhere\n");
  if (path.includes("/")) await mkdir(join(workspace, path.slice(0, path.lastIndexOf("/"))), { recursive: true });
  await make(workspace, path, from, false);
  const store = openStore({ root: join(base, "sessions") });
  const checkpoints = new CheckpointStore(store);
  const { id } = await store.create({ workspace });
  return { workspace, store, checkpoints, id };
}

const cases = WAYS.flatMap((way) =>
  DEPTHS.flatMap((depth) =>
    KINDS.flatMap((from) =>
      KINDS.filter((to) => !(from === "absent" && to === "absent")).map((to) => ({ way, depth, from, to })),
    ),
  ),
);

describe("a kind change rewinds and undoes exactly, with no false conflict", () => {
  it.each(cases)("$from into $to, depth $depth, by a $way", async ({ way, depth, from, to }) => {
    const path = depth === 0 ? "x" : "d1/d2/x";
    const s = await setUp(from, path);
    const change = async () => {
      await rm(join(s.workspace, path), { recursive: true, force: true });
      await make(s.workspace, path, to, from === to);
    };
    if (way === "command") await s.checkpoints.aroundCommand(s.id, { tool: "bash" }, () => undefined); // indexed
    const before = await workspaceTree(s.workspace);
    const target = (await s.store.append(s.id, { type: "message", payload: { role: "user", content: "go" } })).sequence;
    if (way === "command")
      await s.checkpoints.aroundCommand(s.id, { tool: "bash" }, () => {
        execFileSync("sh", ["-c", "true"], { cwd: s.workspace });
        return change();
      });
    else await s.checkpoints.around(s.id, { tool: "edit", paths: [path] }, change);
    const after = await workspaceTree(s.workspace);
    expect(after).not.toEqual(before);

    const report = await rewind(s.store, s.id, { toSequence: target });
    expect(report.conflicts).toBeUndefined();
    expect(await workspaceTree(s.workspace)).toEqual(before);

    const undone = await undoRewind(s.store, s.id);
    expect(undone.conflicts).toBeUndefined();
    expect(await workspaceTree(s.workspace)).toEqual(after);
  });
});
