// A "files" rewind made with keepUndo 0 keeps the log but no undo snapshot: the state the files it changed had
// just before it is kept nowhere. A later rewind to a point between its target and its marker wants that state
// for the paths nothing after the point recorded, and used to miss them silently (`changes: []`, the file left as
// the first rewind made it). It now reports each such path skipped, "undo_not_kept", and rewinds the rest.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind } from "../../src/index.js";
import { smallSession } from "../helpers/small-session.js";

it("a rewind to a point a files rewind with keepUndo 0 went back across: what it cannot know, skipped", async () => {
  const s = await smallSession("agent-tape-files-no-undo-", { files: { "a.txt": "a0\n", "b.txt": "b0\n" } });
  const write = (path: string, content: string) =>
    s.tool("write", [path], () => writeFile(join(s.workspace, path), content));
  await write("a.txt", "a1\n");
  const point = (await s.store.append(s.id, { type: "message", payload: { role: "user", content: "p" } })).sequence;
  await write("b.txt", "b1\n");
  await rewind(s.store, s.id, { toSequence: s.start, mode: "files", keepUndo: 0 });
  expect(await s.tree()).toEqual(s.before);

  const report = await rewind(s.store, s.id, { toSequence: point, mode: "files" });
  // At the point a.txt held "a1": only the first rewind's undo snapshot knew, and it was not kept.
  expect(report.changes).toEqual([{ path: "a.txt", action: "skip", reason: "undo_not_kept" }]);
  expect(report.skipped).toEqual(["a.txt"]);
  expect(await s.tree()).toEqual(s.before); // b.txt held "b0" at the point, as now
});

it("a rewind 'all' that skipped such paths: a later rewind to before it skips them too", async () => {
  const s = await smallSession("agent-tape-all-after-no-undo-", { files: { "a.txt": "a0\n" } });
  const message = async (content: string) =>
    (await s.store.append(s.id, { type: "message", payload: { role: "user", content } })).sequence;
  await s.command("echo a1 > a.txt && rm -f gone.txt");
  const first = await message("first");
  const second = await message("second");
  await rewind(s.store, s.id, { toSequence: s.start, mode: "files", keepUndo: 0 });
  const all = await rewind(s.store, s.id, { toSequence: second, mode: "all", keepUndo: 0 });
  expect(all.changes).toEqual([{ path: "a.txt", action: "skip", reason: "undo_not_kept" }]);
  // The cut took the files rewind's marker; the skip on the new one still says a.txt's state there is not kept.
  const later = await rewind(s.store, s.id, { toSequence: first, mode: "files" });
  expect(later.changes).toEqual([{ path: "a.txt", action: "skip", reason: "undo_not_kept" }]);
  // Nor does a rewind to before the command take a.txt, as the files rewind left it, for a change made outside.
  await s.rewindThenUndo();
});

it("a path a rewind 'all' skipped so, changed by a later rewind: not taken for a change from outside", async () => {
  const s = await smallSession("agent-tape-no-undo-not-outside-", { files: { "x.txt": "x\n" } });
  const removed = await s.command("rm x.txt");
  const looked = await s.tool("look", ["x.txt"], async () => undefined); // records x.txt absent, before and after
  await rewind(s.store, s.id, { toSequence: s.start, mode: "files", keepUndo: 0 }); // x.txt back, no undo kept
  const all = await rewind(s.store, s.id, { toSequence: looked, mode: "all", keepUndo: 0 });
  expect(all.changes).toEqual([{ path: "x.txt", action: "skip", reason: "undo_not_kept" }]);
  // The tape's last word on x.txt was the tool's after-state (absent), and the cut took the rewind that put it
  // back: the file there now is not one someone made outside the session.
  const tree = await s.tree();
  await s.rewindThenUndo({
    to: removed,
    wanted: Object.fromEntries(Object.entries(tree).filter(([p]) => p !== "x.txt")),
  });
});

it("below a path such a rewind changed, what a later capture recorded is not the target's either", async () => {
  const s = await smallSession("agent-tape-no-undo-below-", { files: { "a.txt": "a\n" } });
  const made = await s.command("mkdir d && : > d/f.txt");
  await rewind(s.store, s.id, { toSequence: s.start, mode: "files", keepUndo: 0 }); // d removed, no undo kept
  await s.tool("mkdirs", ["d/new"], () => mkdir(join(s.workspace, "d/new"), { recursive: true }));
  const now = await s.tree();
  // The tool's capture recorded d/new absent: as that rewind left it, not as it was at `made`.
  const report = await rewind(s.store, s.id, { toSequence: made, mode: "files" });
  expect(report.changes).toEqual([
    { path: "d", action: "skip", reason: "undo_not_kept" },
    { path: "d/f.txt", action: "skip", reason: "undo_not_kept" },
    { path: "d/new", action: "skip", reason: "undo_not_kept" },
  ]);
  expect(await s.tree()).toEqual(now);
});

it("below a path skipped so, one recorded before that rewind is still rewound (links-inside seed 7)", async () => {
  const s = await smallSession("agent-tape-no-undo-recorded-below-", {
    files: { "a/x.txt": "x\n" },
    modes: { a: 0o700 },
  });
  const replaced = await s.command("rm -rf a && mkdir a && echo inner > a/inner");
  await s.tool("look", ["a/x.txt"], async () => undefined); // records a/x.txt absent at `replaced`
  await rewind(s.store, s.id, { toSequence: s.start, mode: "files", keepUndo: 0 }); // a, a/x.txt back; no undo
  const report = await rewind(s.store, s.id, { toSequence: replaced, mode: "files" });
  expect(report.changes).toEqual([
    { path: "a", action: "skip", reason: "undo_not_kept" },
    { path: "a/inner", action: "skip", reason: "undo_not_kept" },
    { path: "a/x.txt", action: "delete", diff: { unit: "lines", insertions: 0, deletions: 1 } },
  ]);
  expect(Object.keys(await s.tree())).toEqual(["a"]);
});
