import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CheckpointStore,
  foldConversation,
  isAgentTapeError,
  rewind,
  undoRewind,
  type Conversation,
  type RewindMode,
  type RewindPayload,
} from "../../src/index.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { STORY_CHANGES, STORY_EVENTS_AFTER_TARGET, logBytes, tellTheStory as story } from "../helpers/rewind-story.js";
import { put, recordsLeft, workspaceTree } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";

async function expectNothingToUndo(promise: Promise<unknown>, because: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isAgentTapeError(error, "NOTHING_TO_UNDO"), String(error)).toBe(true);
  expect((error as Error).message).toMatch(because);
}

/** What the undo of the story's rewind does to each path: the rewind's changes, the other way round. */
const lines = (insertions: number, deletions: number) => ({ unit: "lines", insertions, deletions }) as const;
const STORY_UNDO_CHANGES = [
  { path: "bin/run.sh", action: "restore", diff: lines(0, 0) }, // back to 755
  { path: "docs/guide/old.md", action: "delete", diff: lines(0, 1) },
  { path: "src/app/main.ts", action: "restore", diff: lines(1, 1) }, // back to v5
  { path: "src/app/new.ts", action: "restore", diff: lines(1, 0) },
  { path: "vendor", action: "delete" },
  { path: "vendor/pkg", action: "delete" },
  { path: "vendor/pkg/lib", action: "delete" },
  { path: "vendor/pkg/lib/index.js", action: "delete", diff: lines(0, 1) },
  { path: "vendor/pkg/package.json", action: "delete", diff: lines(0, 1) },
];

describe("undoRewind puts back what the last rewind changed", () => {
  it('after an "all" rewind: every file byte for byte with its mode, the removed events re-appended anew', async () => {
    const s = await story();
    const removed = s.eventsBefore.filter((e) => e.sequence > s.target);
    const { markerSequence } = await rewind(s.store, s.id, { toSequence: s.target });
    const marker = markerSequence!;

    const report = await undoRewind(s.store, s.id);

    expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
    const undoSequence = marker + removed.length + 1;
    expect(report).toEqual({
      targetSequence: s.target,
      lastSequence: marker,
      dryRun: false,
      mode: "all",
      filesRestored: 3,
      filesDeleted: 6,
      skipped: [],
      changes: STORY_UNDO_CHANGES,
      diffTotals: { lines: { insertions: 2, deletions: 4 }, bytes: { insertions: 0, deletions: 0 } },
      eventsRemoved: 0,
      blobsPruned: 0,
      undoneMarker: marker,
      eventsRestored: STORY_EVENTS_AFTER_TARGET,
      markerSequence: undoSequence,
    });

    const events = await s.store.readAll(s.id);
    expect(events.filter((e) => e.sequence <= s.target)).toEqual(s.eventsBefore.filter((e) => e.sequence <= s.target));
    expect(events.find((e) => e.sequence === marker)?.type).toBe("session_rewind");
    const reappended = events.filter((e) => e.sequence > marker && e.sequence < undoSequence);
    // The same events, in the same order, numbered after the marker.
    expect(reappended).toEqual(removed.map((e, i) => ({ ...e, sequence: marker + 1 + i })));
    const undoMarker = events.at(-1)!;
    expect(undoMarker).toMatchObject({ type: "session_rewind", sequence: undoSequence });
    expect(undoMarker.payload).toMatchObject({
      undoOf: marker,
      mode: "all",
      targetSequence: s.target,
      // The former sequences as one run: the story's cut is one stretch of numbers.
      reappendedRanges: [[removed[0]!.sequence, removed.at(-1)!.sequence]],
      changes: STORY_UNDO_CHANGES,
    });
    expect(removed.map((e) => e.sequence)).toEqual(removed.map((_, i) => s.target + 1 + i));
    expect(undoMarker.payload).not.toHaveProperty("reappendedFrom");
    // The conversation reads as it did before the rewind.
    const said = (c: Conversation) =>
      c.messages.map((m) => [m.role, m.content, m.toolCalls.map((t) => t.result?.output)]);
    expect(said(await s.store.conversation(s.id))).toEqual(
      said(s.eventsBefore.reduce(foldConversation, { messages: [], lastSequence: 0 } as Conversation)),
    );
    // Its archive has served its purpose.
    expect(await recordsLeft(s.store, s.id)).toEqual([]);
  });

  it('after a "files" rewind: the files come back and the log gains only the undo marker', async () => {
    const s = await story();
    const { markerSequence } = await rewind(s.store, s.id, { toSequence: s.target, mode: "files" });
    const report = await undoRewind(s.store, s.id);

    expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
    expect(report).toMatchObject({
      mode: "files",
      changes: STORY_UNDO_CHANGES,
      eventsRestored: 0,
      undoneMarker: markerSequence,
      markerSequence: markerSequence! + 1,
    });
    const events = await s.store.readAll(s.id);
    expect(events.slice(0, -2)).toEqual(s.eventsBefore);
    expect(events.at(-1)!.payload).toMatchObject({ undoOf: markerSequence, reappendedRanges: [] });
  });

  it('after a "conversation" rewind: the events come back and no file is touched', async () => {
    const s = await story();
    const removed = s.eventsBefore.filter((e) => e.sequence > s.target);
    const { markerSequence } = await rewind(s.store, s.id, { toSequence: s.target, mode: "conversation" });
    await put(s.workspace, "edited-by-hand.txt", "after the rewind\n");
    const treeBeforeUndo = await workspaceTree(s.workspace);

    const report = await undoRewind(s.store, s.id);

    expect(report).toMatchObject({ changes: [], filesRestored: 0, filesDeleted: 0, eventsRestored: removed.length });
    expect(await workspaceTree(s.workspace)).toEqual(treeBeforeUndo);
    const events = await s.store.readAll(s.id);
    expect(events.filter((e) => e.sequence > markerSequence! && e.type !== "session_rewind")).toEqual(
      removed.map((e, i) => ({ ...e, sequence: markerSequence! + 1 + i })),
    );
  });

  it("binary files, symlinks and modes come back byte for byte", async () => {
    const base = await realpath(await tempDir("agent-tape-undo-bytes-"));
    const workspace = join(base, "ws");
    await mkdir(workspace);
    const store = openStore({ root: join(base, "sessions") });
    const checkpoints = new CheckpointStore(store);
    const { id } = await store.create({ workspace });
    await put(workspace, "img/logo.bin", randomBytes(4096), 0o600);
    await put(workspace, "tool.sh", "#!/bin/sh\n", 0o755);
    await symlink("img/logo.bin", join(workspace, "logo"));
    const target = (await store.append(id, { type: "message", payload: { role: "user", content: "target" } })).sequence;
    await checkpoints.around(id, { tool: "mess", paths: ["img", "tool.sh", "logo", "new.bin"] }, async () => {
      await writeFile(join(workspace, "img/logo.bin"), randomBytes(5000));
      await chmod(join(workspace, "img/logo.bin"), 0o640);
      await chmod(join(workspace, "tool.sh"), 0o700);
      await rm(join(workspace, "logo"));
      await symlink("tool.sh", join(workspace, "logo"));
      await writeFile(join(workspace, "new.bin"), randomBytes(100_000));
    });
    const treeBefore = await workspaceTree(workspace);
    const bytesBefore = await readFile(join(workspace, "new.bin"));

    await rewind(store, id, { toSequence: target });
    expect(await workspaceTree(workspace)).not.toEqual(treeBefore);
    await undoRewind(store, id);

    expect(await workspaceTree(workspace)).toEqual(treeBefore);
    expect((await readFile(join(workspace, "new.bin"))).equals(bytesBefore)).toBe(true);
  });

  it("a dry run reports the plan and touches nothing", async () => {
    const s = await story();
    await rewind(s.store, s.id, { toSequence: s.target });
    const tree = await workspaceTree(s.workspace);
    const log = await logBytes(s.root, s.id);
    const records = await recordsLeft(s.store, s.id);

    const dry = await undoRewind(s.store, s.id, { dryRun: true });

    expect(dry).toMatchObject({ dryRun: true, changes: STORY_UNDO_CHANGES, eventsRestored: STORY_EVENTS_AFTER_TARGET });
    expect(dry.markerSequence).toBeUndefined();
    expect(await workspaceTree(s.workspace)).toEqual(tree);
    expect((await logBytes(s.root, s.id)).equals(log)).toBe(true);
    expect(await recordsLeft(s.store, s.id)).toEqual(records);
  });
});

describe("after an undo", () => {
  it("the session goes on: a new rewind to the same target gives its files again, marker after undo's", async () => {
    const s = await story();
    await rewind(s.store, s.id, { toSequence: s.target });
    const { markerSequence: undoMarker } = await undoRewind(s.store, s.id);

    const again = await rewind(s.store, s.id, { toSequence: s.target });

    expect(again.markerSequence).toBe(undoMarker! + 1);
    expect(again.changes).toEqual(STORY_CHANGES);
    expect(await workspaceTree(s.workspace)).toEqual(s.treeAtTarget);
    // And that rewind can be undone in turn.
    await undoRewind(s.store, s.id);
    expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
  });

  it("rewinding to a re-appended event gives the files as they were at the original event", async () => {
    const s = await story();
    const thirdEdit = s.eventsBefore.find(
      (e) => e.type === "tool_result" && (e.payload as { callId: string }).callId === "edit-3",
    )!;
    const { markerSequence } = await rewind(s.store, s.id, { toSequence: s.target });
    await undoRewind(s.store, s.id);
    const reappendedAt =
      markerSequence! +
      1 +
      s.eventsBefore.filter((e) => e.sequence > s.target && e.sequence < thirdEdit.sequence).length;
    expect((await s.store.readAll(s.id)).find((e) => e.sequence === reappendedAt)?.payload).toEqual(thirdEdit.payload);

    await rewind(s.store, s.id, { toSequence: reappendedAt });

    expect(await workspaceTree(s.workspace)).toEqual({ ...s.treeAtTarget, "src/app/main.ts": 'file 644 "v3\\n"' });
  });

  it("rewinding to the last re-appended event changes nothing: an undo snapshot is no state of the log", async () => {
    const s = await story();
    await rewind(s.store, s.id, { toSequence: s.target });
    const { markerSequence: undoMarker } = await undoRewind(s.store, s.id);

    const report = await rewind(s.store, s.id, { toSequence: undoMarker! - 1 });

    expect(report.changes).toEqual([]);
    expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
  });

  it("a new append takes the number after the undo marker", async () => {
    const s = await story();
    await rewind(s.store, s.id, { toSequence: s.target });
    const { markerSequence } = await undoRewind(s.store, s.id);
    const next = await s.store.append(s.id, { type: "message", payload: { role: "user", content: "next" } });
    expect(next.sequence).toBe(markerSequence! + 1);
  });
});

describe("NOTHING_TO_UNDO", () => {
  it("for an empty session, and one whose last event is not a rewind", async () => {
    const base = await tempDir("agent-tape-undo-none-");
    const store = openStore({ root: base });
    const { id } = await store.create({ workspace: base });
    await expectNothingToUndo(undoRewind(store, id), /empty/);
    await store.append(id, { type: "message", payload: { role: "user", content: "hi" } });
    await expectNothingToUndo(undoRewind(store, id), /not a rewind/);
  });

  it("once the session has moved on after the rewind", async () => {
    const s = await story();
    await rewind(s.store, s.id, { toSequence: s.target });
    await s.store.append(s.id, { type: "message", payload: { role: "user", content: "moving on" } });
    const tree = await workspaceTree(s.workspace);
    await expectNothingToUndo(undoRewind(s.store, s.id), /not a rewind/);
    expect(await workspaceTree(s.workspace)).toEqual(tree);
  });

  it("for a rewind undone already", async () => {
    const s = await story();
    await rewind(s.store, s.id, { toSequence: s.target });
    await undoRewind(s.store, s.id);
    const log = await logBytes(s.root, s.id);
    await expectNothingToUndo(undoRewind(s.store, s.id), /already undone/);
    expect((await logBytes(s.root, s.id)).equals(log)).toBe(true);
  });

  it.each<RewindMode>(["all", "files"])(
    'for a "%s" rewind made with keepUndo: 0, which keeps nothing to undo with',
    async (mode) => {
      const s = await story();
      await rewind(s.store, s.id, { toSequence: s.target, mode, keepUndo: 0 });
      const tree = await workspaceTree(s.workspace);
      await expectNothingToUndo(undoRewind(s.store, s.id), /keepUndo: 0/);
      expect(await workspaceTree(s.workspace)).toEqual(tree);
      expect(await recordsLeft(s.store, s.id)).toEqual([]);
    },
  );

  it("when the removed events are no longer kept", async () => {
    const s = await story();
    const { markerSequence } = await rewind(s.store, s.id, { toSequence: s.target });
    await lockedAccess(s.store).withLockedSession(s.id, (locked) =>
      locked.deleteRecord(`rewind-archive-${markerSequence}`),
    );
    await expectNothingToUndo(undoRewind(s.store, s.id), /no longer kept/);
  });
});

describe("keepUndo", () => {
  it("keeps the archives of that many of the latest rewinds and drops older ones", async () => {
    const w = await smallSessionWithMessages(6);
    const first = await rewind(w.store, w.id, { toSequence: 5 });
    const second = await rewind(w.store, w.id, { toSequence: 3, keepUndo: 2 });
    expect((await recordsLeft(w.store, w.id)).sort()).toEqual([
      `rewind-archive-${first.markerSequence}`,
      `rewind-archive-${second.markerSequence}`,
    ]);
    const third = await rewind(w.store, w.id, { toSequence: 2 });
    expect(await recordsLeft(w.store, w.id)).toEqual([`rewind-archive-${third.markerSequence}`]);
    const marker = (await w.store.readAll(w.id)).at(-1)!.payload as RewindPayload;
    expect(marker.undo?.archive).toBe(`rewind-archive-${third.markerSequence}`);
  });
});

async function smallSessionWithMessages(count: number) {
  const base = await tempDir("agent-tape-undo-keep-");
  const store = openStore({ root: base });
  const { id } = await store.create({ workspace: base });
  for (let i = 1; i <= count; i++)
    await store.append(id, { type: "message", payload: { role: "user", content: `m${i}` } });
  return { store, id };
}
