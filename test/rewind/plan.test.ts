import { chmod, mkdir, realpath, symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { FileSnapshot, StoredEvent } from "../../src/index.js";
import { closestSnapshotPerPath, planFileChanges } from "../../src/rewind/plan.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { UNDO_LIMITS } from "../../src/rewind/rewind.js";
import { put, sha256, workspaceTree } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { allOwnerless } from "../helpers/ownerless.js";
import { damageBlob } from "../helpers/blob-files.js";

let nextSequence = 1;
function event(type: string, payload: unknown): StoredEvent {
  const sequence = nextSequence++;
  return { v: 1, id: `e${sequence}`, sessionId: "s", sequence, type, createdAt: "2025-01-01T00:00:00.000Z", payload };
}
const checkpoint = (...files: FileSnapshot[]) => event("session_checkpoint", { tool: "t", workspace: "/ws", files });
const marker = (mode: string, ...files: FileSnapshot[]) =>
  event("session_rewind", {
    targetSequence: 0,
    mode,
    filesRestored: 0,
    filesDeleted: 0,
    skipped: [],
    changes: [],
    eventsRemoved: 0,
    blobsPruned: 0,
    undo: { workspace: "/ws", files },
  });
const blob = (path: string, content: string, mode = 0o644): FileSnapshot => ({
  path,
  kind: "blob",
  blob: sha256(content),
  bytes: content.length,
  mode,
});

describe("closestSnapshotPerPath", () => {
  it("keeps, per path, the first snapshot after the target and ignores newer ones", async () => {
    const closest = await closestSnapshotPerPath([
      event("message", { role: "user", content: "hi" }),
      checkpoint(blob("a", "a at the target"), { path: "b", kind: "absent" }),
      checkpoint(blob("a", "a later"), blob("b", "b later"), blob("c", "c at the target")),
      event("tool_result", { callId: "x", output: "ok" }),
      checkpoint({ path: "c", kind: "skipped", reason: "too_large" }),
    ]);
    expect(Object.fromEntries(closest)).toEqual({
      a: blob("a", "a at the target"),
      b: { path: "b", kind: "absent" },
      c: blob("c", "c at the target"),
    });
  });

  it("keeps a skipped record as the closest: the caller reports it rather than looking further", async () => {
    const closest = await closestSnapshotPerPath([
      checkpoint({ path: "big", kind: "skipped", reason: "too_large" }),
      checkpoint(blob("big", "small now")),
    ]);
    expect(closest.get("big")).toEqual({ path: "big", kind: "skipped", reason: "too_large" });
  });

  it('counts the undo snapshot of a "files" rewind marker, not that of an "all" or "conversation" one', async () => {
    const closest = await closestSnapshotPerPath([
      marker("all", blob("from-all", "x")),
      marker("conversation", blob("from-conversation", "x")),
      marker("files", blob("from-files", "before the files rewind")),
      checkpoint(blob("from-all", "the real before-state"), blob("from-files", "later")),
    ]);
    expect(Object.fromEntries(closest)).toEqual({
      "from-files": blob("from-files", "before the files rewind"),
      "from-all": blob("from-all", "the real before-state"),
    });
  });
});

describe("planFileChanges", () => {
  async function setup() {
    const base = await realpath(await tempDir("agent-tape-plan-"));
    const workspace = join(base, "ws");
    await mkdir(workspace);
    const root = join(base, "sessions");
    const store = openStore({ root });
    const { id } = await store.create({ workspace });
    const storeBlob = (content: string) =>
      lockedAccess(store).withLockedSession(id, (locked) => locked.writeBlob(sha256(content), Buffer.from(content)));
    const plan = (wanted: FileSnapshot[]) =>
      planFileChanges(store.backend, id, workspace, workspace, new Map(wanted.map((f) => [f.path, f])), UNDO_LIMITS);
    return { base, root, workspace, store, id, storeBlob, plan };
  }

  it("restores what differs, deletes what should be absent, omits what matches; by path; writes nothing", async () => {
    const p = await setup();
    await put(p.workspace, "same.txt", "same\n");
    await put(p.workspace, "edited.txt", "edited\n");
    await put(p.workspace, "mode.sh", "#!/bin/sh\n", 0o755);
    await put(p.workspace, "created.txt", "created after the target\n");
    await symlink("same.txt", join(p.workspace, "link"));
    for (const content of ["same\n", "original\n", "#!/bin/sh\n"]) await p.storeBlob(content);
    const tree = await workspaceTree(p.workspace);

    const plan = await p.plan([
      blob("same.txt", "same\n"),
      blob("edited.txt", "original\n"),
      blob("mode.sh", "#!/bin/sh\n", 0o644),
      { path: "created.txt", kind: "absent" },
      { path: "never-existed.txt", kind: "absent" },
      { path: "link", kind: "symlink", target: "edited.txt" },
    ]);

    expect(plan.changes.map(({ path, action }) => [path, action])).toEqual([
      ["created.txt", "delete"],
      ["edited.txt", "restore"],
      ["link", "restore"],
      ["mode.sh", "restore"],
    ]);
    expect(plan.changes.find((c) => c.path === "edited.txt")?.becomes).toEqual(blob("edited.txt", "original\n"));
    expect([...plan.blobs.keys()].sort()).toEqual(
      [sha256("same\n"), sha256("original\n"), sha256("#!/bin/sh\n")].sort(),
    );
    expect(await workspaceTree(p.workspace)).toEqual(tree);
  });

  it("skips, with the reason: paths outside the workspace, records not captured, missing or bad blobs", async () => {
    const p = await setup();
    await put(p.workspace, "a.txt", "now\n");
    await p.storeBlob("damaged\n");
    await damageBlob(p.root, p.id, sha256("damaged\n"), "other bytes\n");

    const plan = await p.plan([
      blob("../escape.txt", "x"),
      { path: "big.bin", kind: "skipped", reason: "too_large" },
      blob("missing.txt", "never stored\n"),
      blob("a.txt", "damaged\n"),
    ]);

    expect(plan.changes).toEqual([
      { path: "../escape.txt", action: "skip", reason: "outside_workspace" },
      { path: "a.txt", action: "skip", reason: "blob_corrupt" },
      { path: "big.bin", action: "skip", reason: "not captured (too_large)" },
      { path: "missing.txt", action: "skip", reason: "blob_missing" },
    ]);
    expect(plan.current.files).toEqual([]);
  });

  it("snapshots for undo exactly the paths that will change (a folder with all below it), bytes and all", async () => {
    const p = await setup();
    await put(p.workspace, "keep.txt", "unchanged\n");
    await put(p.workspace, "edit.txt", "current bytes\n");
    await put(p.workspace, "made/deep/file.txt", "inside a folder made after the target\n");
    await p.storeBlob("unchanged\n");
    await p.storeBlob("old bytes\n");

    const plan = await p.plan([
      blob("keep.txt", "unchanged\n"),
      blob("edit.txt", "old bytes\n"),
      { path: "made", kind: "absent" },
    ]);

    expect(plan.current.files.map((f) => `${f.path}:${f.kind}`).sort()).toEqual([
      "edit.txt:blob",
      "made/deep/file.txt:blob",
      "made/deep:directory",
      "made:directory",
    ]);
    expect([...plan.current.blobs.keys()].sort()).toEqual(
      [sha256("current bytes\n"), sha256("inside a folder made after the target\n")].sort(),
    );
  });

  it("a folder that is a folder already changes only if its mode differs, and is not walked", async () => {
    const p = await setup();
    await put(p.workspace, "dir/a.txt", "a\n");
    await put(p.workspace, "moded/b.txt", "b\n");
    await chmod(join(p.workspace, "dir"), 0o755);
    await chmod(join(p.workspace, "moded"), 0o700);

    const plan = await p.plan([
      { path: "dir", kind: "directory", mode: 0o755 },
      { path: "moded", kind: "directory", mode: 0o755 },
    ]);

    expect(plan.changes.map(({ path, action }) => [path, action])).toEqual([["moded", "restore"]]);
    expect(allOwnerless(plan.current.files)).toEqual([{ path: "moded", kind: "directory", mode: 0o700 }]);
  });
});
