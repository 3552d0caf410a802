import { execFileSync } from "node:child_process";
import { mkdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, expect, it } from "vitest";
import { CheckpointStore, type SessionStore, rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/byte-tree.js";
import { closeAfter, openStore, tempDir } from "../helpers/fixture.js";

// A folder replaced by a link whose target a tool deleted just before (so the link dangles): a files rewind to
// before both puts the folder back with everything below it. Found by the whole-workspace property with the
// kind-changes family (docs/ARCHITECTURE.md, "Workspace index").

let store: SessionStore;
let checkpoints: CheckpointStore;
let workspace: string;
let outside: string;

beforeEach(async () => {
  const base = await realpath(await tempDir("agent-tape-dangling-"));
  workspace = join(base, "ws");
  outside = join(base, "outside");
  await mkdir(outside);
  await writeFile(join(outside, "c.txt"), "outside\n");
  await mkdir(join(workspace, "d", "e"), { recursive: true });
  await writeFile(join(workspace, "a.txt"), "a\n");
  await writeFile(join(workspace, "d", "c.txt"), "c\n");
  await writeFile(join(workspace, "d", "e", "f.txt"), "f\n");
  store = openStore({ root: join(base, "sessions") });
  checkpoints = closeAfter(new CheckpointStore(store));
});

const sh = (script: string) => () => execFileSync("/bin/sh", ["-c", script], { cwd: workspace, stdio: "ignore" });

it("a folder made a link to a file a tool deleted comes back whole", async () => {
  const { id } = await store.create({ workspace });
  await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
  const before = byteTreeOf(workspace);
  const target = (await store.get(id))!.lastSequence;
  await checkpoints.around(id, { tool: "edit", paths: ["a.txt"] }, () => rm(join(workspace, "a.txt")));
  await checkpoints.aroundCommand(id, { tool: "bash" }, sh("rm -rf d && ln -s a.txt d"));
  const after = byteTreeOf(workspace);
  const report = await rewind(store, id, { toSequence: target, mode: "files" });
  expect(report.skipped).toEqual([]);
  expect(byteTreeOf(workspace)).toEqual(before);
  await undoRewind(store, id);
  expect(byteTreeOf(workspace)).toEqual(after);
});

it("a folder made a link to a folder outside comes back whole, and nothing outside is touched", async () => {
  const { id } = await store.create({ workspace });
  await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
  const before = byteTreeOf(workspace);
  const target = (await store.get(id))!.lastSequence;
  await checkpoints.aroundCommand(id, { tool: "bash" }, sh(`rm -rf d && ln -s '${outside}' d`));
  const report = await rewind(store, id, { toSequence: target, mode: "files" });
  expect(report.skipped).toEqual([]);
  expect(byteTreeOf(workspace)).toEqual(before);
  expect(byteTreeOf(outside)).toEqual({ "c.txt": expect.stringMatching(/^file /) });
  expect(await readFile(join(outside, "c.txt"), "utf8")).toBe("outside\n");
  await undoRewind(store, id);
  expect(await readFile(join(outside, "c.txt"), "utf8")).toBe("outside\n");
});

it("a rewind to where a folder was a link, after rewinds and an undo through it, writes nothing below", async () => {
  const { id } = await store.create({ workspace });
  await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
  const start = (await store.get(id))!.lastSequence;
  await checkpoints.aroundCommand(id, { tool: "bash" }, sh("rm -rf d && ln -s a.txt d"));
  const linked = byteTreeOf(workspace);
  const afterCommand = (await store.get(id))!.lastSequence;
  await rewind(store, id, { toSequence: start, mode: "files" });
  await undoRewind(store, id);
  const afterUndo = (await store.get(id))!.lastSequence;
  await rewind(store, id, { toSequence: afterCommand, mode: "files" });
  expect(byteTreeOf(workspace)).toEqual(linked);
  // The records after this point: the first rewind's undo snapshot says `d` was a link (nothing kept below it),
  // the second's says what was below the folder `d`; below a link at the target there is nothing of its own.
  const report = await rewind(store, id, { toSequence: afterUndo, mode: "files" });
  expect(report.changes).toEqual([]);
  expect(byteTreeOf(workspace)).toEqual(linked);
});
