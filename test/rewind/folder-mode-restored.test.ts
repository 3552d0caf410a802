// Found by the whole-workspace property test (seed 1235697846, soak), shrunk to: a tool handed `dir-link` (a link to
// the folder `d`) removes the link, a command runs `chmod 600 d`, a rewind to before both puts the link and d's mode
// back, and its undo is refused: "d/c.txt (created), d/e (created)". The tool's capture recorded `d` as a complete
// listing; the rewind restored it in place and rewrote none of its files, so its marker named `d` (complete) and
// nothing below it, and the conflict check took every file left in `d` for one made since by someone else.
import { chmod, mkdir, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind } from "../../src/index.js";
import { LastWritten } from "../../src/rewind/conflicts.js";
import type { StoredEvent } from "../../src/core/events.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { openStore, tempDir } from "../helpers/fixture.js";

async function folderWithFiles() {
  const base = await realpath(await tempDir("agent-tape-folder-mode-"));
  const workspace = join(base, "ws");
  await mkdir(join(workspace, "d/e"), { recursive: true });
  await writeFile(join(workspace, "d/c.txt"), "two\n");
  await writeFile(join(workspace, "d/e/f.txt"), "three\n");
  await symlink("d", join(workspace, "dir-link"));
  const store = openStore({ root: join(base, "sessions") });
  const checkpoints = new CheckpointStore(store);
  const { id } = await store.create({ workspace });
  await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
  return { workspace, store, checkpoints, id, tree: () => byteTreeOf(workspace) };
}

describe("a rewind that puts a folder back in place, its files left as they were", () => {
  for (const [how, named] of [
    ["named by a tool", "d"],
    ["reached through a link a tool was handed", "dir-link"],
  ] as const)
    for (const mode of ["all", "files"] as const)
      it(`its undo finds no conflict and gives the tree back (folder ${how}, mode ${mode})`, async () => {
        const t = await folderWithFiles();
        try {
          const start = await t.tree();
          await t.checkpoints.around(t.id, { tool: "edit", paths: [named] }, () =>
            named === "d" ? chmod(join(t.workspace, "d"), 0o700) : rm(join(t.workspace, named)),
          );
          await t.checkpoints.aroundCommand(t.id, { tool: "bash" }, () => chmod(join(t.workspace, "d"), 0o600));
          const before = await t.tree();
          await rewind(t.store, t.id, { toSequence: 1, mode });
          expect(await t.tree()).toEqual(start);
          await undoRewind(t.store, t.id);
          expect(await t.tree()).toEqual(before);
        } finally {
          t.checkpoints.close();
          await t.store.close();
        }
      });

  it("a file made by hand in that folder after the rewind is still a conflict for a later rewind", async () => {
    const t = await folderWithFiles();
    try {
      await t.checkpoints.around(t.id, { tool: "edit", paths: ["d"] }, () => chmod(join(t.workspace, "d"), 0o700));
      await rewind(t.store, t.id, { toSequence: 1, mode: "files" });
      const head = (await t.store.get(t.id))!.lastSequence;
      await t.checkpoints.around(t.id, { tool: "edit", paths: ["d"] }, () => rm(join(t.workspace, "d/c.txt")));
      await writeFile(join(t.workspace, "d/by-hand.txt"), "typed by hand\n");
      const report = await rewind(t.store, t.id, { toSequence: head, mode: "files", dryRun: true });
      expect(report.conflicts?.map((c) => [c.path, c.change])).toEqual([["d/by-hand.txt", "created"]]);
    } finally {
      t.checkpoints.close();
      await t.store.close();
    }
  });
});

describe("what the tape knows after such a rewind (LastWritten)", () => {
  const marker = (payload: object): StoredEvent =>
    ({ sequence: 9, type: "session_rewind", payload, at: "2026-01-01T00:00:00.000Z" }) as unknown as StoredEvent;
  const rewound = {
    targetSequence: 1,
    mode: "files",
    filesRestored: 1,
    filesDeleted: 0,
    skipped: [],
    eventsRemoved: 0,
    blobsPruned: 0,
    changes: [{ path: "d", action: "restore" }],
    wrote: { workspace: "/ws", files: [{ path: "d", kind: "directory", mode: 0o755, complete: true }] },
  };

  it("the files its undo snapshot holds below the folder keep the state they had before it", () => {
    const written = new LastWritten();
    const undo = {
      workspace: "/ws",
      files: [
        { path: "d", kind: "directory", mode: 0o600 },
        { path: "d/c.txt", kind: "blob", blob: "a".repeat(64), bytes: 4, mode: 0o644 },
      ],
    };
    written.add(marker({ ...rewound, undo }));
    const states = written.in("/ws");
    expect(states.get("d")).toEqual({ path: "d", kind: "directory", mode: 0o755, complete: true });
    expect(states.get("d/c.txt")).toEqual({ path: "d/c.txt", kind: "file", sha256: "a".repeat(64), mode: 0o644 });
  });

  it("without an undo snapshot (keepUndo: 0) the folder is not claimed complete: what is in it is not known", () => {
    const written = new LastWritten();
    written.add(marker(rewound));
    expect(written.in("/ws").get("d")).toEqual({ path: "d", kind: "directory", mode: 0o755, complete: false });
  });
});
