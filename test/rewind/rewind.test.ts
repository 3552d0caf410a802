import { mkdir, readFile, realpath, rename, stat, symlink, writeFile } from "node:fs/promises";
import { renameSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, gc, isAgentTapeError, rewind, type RewindMode, type RewindPayload } from "../../src/index.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import {
  STORY_CHANGES,
  STORY_DIFF_TOTALS,
  STORY_EVENTS_AFTER_TARGET,
  logBytes,
  tellTheStory as story,
} from "../helpers/rewind-story.js";
import { put, recordsLeft, sha256, workspaceTree } from "../helpers/rewind-workspace.js";
import { archivedEventsOf } from "../helpers/stored-events.js";
import { referencedBlobs } from "../../src/blobs/references.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { damageBlob } from "../helpers/blob-files.js";

/** A fresh session over an empty workspace, with a folder beside it that must stay untouched. */
async function smallSession(options: { maxFileBytes?: number } = {}) {
  const base = await realpath(await tempDir("agent-tape-rewind-small-"));
  const workspace = join(base, "ws");
  const outside = join(base, "outside");
  await mkdir(workspace);
  await mkdir(outside);
  const root = join(base, "sessions");
  const store = openStore({ root });
  const checkpoints = new CheckpointStore(store, options);
  const { id } = await store.create({ workspace });
  const say = async (content: string) =>
    (await store.append(id, { type: "message", payload: { role: "user", content } })).sequence;
  return { base, root, workspace, outside, store, checkpoints, id, say };
}

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isAgentTapeError(error, code as never), `expected ${code}, got ${String(error)}`).toBe(true);
}

const STORY_REPORT_FILES = { filesRestored: 8, filesDeleted: 1, skipped: [], changes: STORY_CHANGES };
const STORY_REPORT = { ...STORY_REPORT_FILES, diffTotals: STORY_DIFF_TOTALS };

describe("rewinding the story", () => {
  it('mode "all" puts every file back as it was at the target, cuts the log to the target plus a marker', async () => {
    const s = await story();
    const last = s.eventsBefore.at(-1)!.sequence;
    const report = await rewind(s.store, s.id, { toSequence: s.target });

    expect(report).toEqual({
      targetSequence: s.target,
      lastSequence: last,
      dryRun: false,
      mode: "all",
      ...STORY_REPORT,
      eventsRemoved: STORY_EVENTS_AFTER_TARGET,
      blobsPruned: 0, // the removed checkpoints' blobs are kept for undo by the archive
      markerSequence: last + 1,
    });
    expect(await workspaceTree(s.workspace)).toEqual(s.treeAtTarget);

    const events = await s.store.readAll(s.id);
    expect(events.slice(0, -1)).toEqual(s.eventsBefore.filter((e) => e.sequence <= s.target));
    const marker = events.at(-1)!;
    expect(marker).toMatchObject({ type: "session_rewind", sequence: last + 1, sessionId: s.id });
    const payload = marker.payload as RewindPayload;
    expect(payload).toMatchObject({
      targetSequence: s.target,
      mode: "all",
      ...STORY_REPORT_FILES,
      eventsRemoved: STORY_EVENTS_AFTER_TARGET,
      blobsPruned: 0,
    });
    expect(payload.undo?.archive).toBe(`rewind-archive-${last + 1}`);
    // The bytes of the kept prefix are the very bytes that were there: a rewrite, not a re-serialisation.
    const prefixEnd = s.logBytesBefore.indexOf(`"sequence":${s.target},`);
    const keptBytes = s.logBytesBefore.subarray(0, s.logBytesBefore.indexOf("\n", prefixEnd) + 1);
    expect((await logBytes(s.root, s.id)).subarray(0, keptBytes.length).equals(keptBytes)).toBe(true);
  });

  it('mode "files" puts the files back and keeps every event, adding the marker that records it', async () => {
    const s = await story();
    const last = s.eventsBefore.at(-1)!.sequence;
    const report = await rewind(s.store, s.id, { toSequence: s.target, mode: "files" });

    expect(report).toEqual({
      targetSequence: s.target,
      lastSequence: last,
      dryRun: false,
      mode: "files",
      ...STORY_REPORT,
      eventsRemoved: 0,
      blobsPruned: 0,
      markerSequence: last + 1,
    });
    expect(await workspaceTree(s.workspace)).toEqual(s.treeAtTarget);
    const events = await s.store.readAll(s.id);
    expect(events.slice(0, -1)).toEqual(s.eventsBefore);
    expect(events.at(-1)).toMatchObject({
      type: "session_rewind",
      sequence: last + 1,
      payload: { mode: "files", ...STORY_REPORT_FILES },
    });
  });

  it('mode "conversation" cuts the log and leaves every file as it is', async () => {
    const s = await story();
    const last = s.eventsBefore.at(-1)!.sequence;
    const report = await rewind(s.store, s.id, { toSequence: s.target, mode: "conversation" });

    expect(report).toEqual({
      targetSequence: s.target,
      lastSequence: last,
      dryRun: false,
      mode: "conversation",
      filesRestored: 0,
      filesDeleted: 0,
      skipped: [],
      changes: [],
      diffTotals: { lines: { insertions: 0, deletions: 0 }, bytes: { insertions: 0, deletions: 0 } },
      eventsRemoved: STORY_EVENTS_AFTER_TARGET,
      blobsPruned: 0,
      markerSequence: last + 1,
    });
    expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
    const events = await s.store.readAll(s.id);
    expect(events.slice(0, -1)).toEqual(s.eventsBefore.filter((e) => e.sequence <= s.target));
    expect(events.at(-1)).toMatchObject({
      type: "session_rewind",
      sequence: last + 1,
      payload: { mode: "conversation", eventsRemoved: STORY_EVENTS_AFTER_TARGET },
    });
  });

  it.each<RewindMode>(["all", "files", "conversation"])(
    'a dry run in mode "%s" reports the plan and touches no file, event, blob or record',
    async (mode) => {
      const s = await story();
      const recordsBefore = await recordsLeft(s.store, s.id);
      const dry = await rewind(s.store, s.id, { toSequence: s.target, mode, dryRun: true });

      expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
      expect((await logBytes(s.root, s.id)).equals(s.logBytesBefore)).toBe(true);
      expect((await s.store.backend.listBlobs(s.id)).sort()).toEqual(s.blobsBefore);
      expect(await recordsLeft(s.store, s.id)).toEqual(recordsBefore);

      // The plan is what the real rewind then does.
      const real = await rewind(s.store, s.id, { toSequence: s.target, mode });
      const { markerSequence, ...realWithoutMarker } = real;
      expect(markerSequence).toBeGreaterThan(s.target);
      expect(dry).toEqual({ ...realWithoutMarker, dryRun: true });
      expect(dry.markerSequence).toBeUndefined();
    },
  );
});

describe("the closest snapshot decides", () => {
  it("a path whose closest record was skipped is reported and left alone, not restored from a newer one", async () => {
    const w = await smallSession({ maxFileBytes: 16 });
    await put(w.workspace, "big.bin", "far more than sixteen bytes\n");
    await put(w.workspace, "small.txt", "s0\n");
    const target = await w.say("target");
    // Too large when first captured after the target: its content at the target is unknown.
    await w.checkpoints.around(w.id, { tool: "shrink", paths: ["big.bin", "small.txt"] }, async () => {
      await writeFile(join(w.workspace, "big.bin"), "tiny\n");
      await writeFile(join(w.workspace, "small.txt"), "s1\n");
    });
    // A newer snapshot holds "tiny\n": restoring it would pretend to know what the file was.
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["big.bin"] }, () =>
      writeFile(join(w.workspace, "big.bin"), "changed\n"),
    );

    const report = await rewind(w.store, w.id, { toSequence: target });

    expect(report.skipped).toEqual(["big.bin"]);
    expect(report.changes).toEqual([
      { path: "big.bin", action: "skip", reason: "not captured (too_large)" },
      { path: "small.txt", action: "restore", diff: { unit: "lines", insertions: 1, deletions: 1 } },
    ]);
    expect(report.filesRestored).toBe(1);
    expect(await readFile(join(w.workspace, "big.bin"), "utf8")).toBe("changed\n");
    expect(await readFile(join(w.workspace, "small.txt"), "utf8")).toBe("s0\n");
  });

  it('a second "all" rewind to the same target changes nothing: an undo snapshot is no state of the log', async () => {
    const w = await smallSession();
    await put(w.workspace, "p.txt", "at target\n");
    const target = await w.say("target");
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["p.txt"] }, () =>
      writeFile(join(w.workspace, "p.txt"), "rewound away\n"),
    );
    await rewind(w.store, w.id, { toSequence: target });
    await w.say("carry on");

    const again = await rewind(w.store, w.id, { toSequence: target });

    expect(again.changes).toEqual([]);
    expect(await readFile(join(w.workspace, "p.txt"), "utf8")).toBe("at target\n");
  });

  it('after an "all" rewind and new edits, rewinding to an earlier target gives that target\'s files', async () => {
    const w = await smallSession();
    await put(w.workspace, "p.txt", "p0\n");
    await put(w.workspace, "q.txt", "q0\n");
    const early = await w.say("early");
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["q.txt"] }, () =>
      writeFile(join(w.workspace, "q.txt"), "q1\n"),
    );
    const later = await w.say("later");
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["p.txt"] }, () =>
      writeFile(join(w.workspace, "p.txt"), "p-lost\n"),
    );
    await rewind(w.store, w.id, { toSequence: later });
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["p.txt"] }, () =>
      writeFile(join(w.workspace, "p.txt"), "p2\n"),
    );

    await rewind(w.store, w.id, { toSequence: early });

    expect(await readFile(join(w.workspace, "p.txt"), "utf8")).toBe("p0\n");
    expect(await readFile(join(w.workspace, "q.txt"), "utf8")).toBe("q0\n");
  });

  it('after a "files" rewind, its marker is the before-snapshot of what it changed: it can be rewound to', async () => {
    const w = await smallSession();
    await put(w.workspace, "p.txt", "p0\n");
    const target = await w.say("target");
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["p.txt"] }, () =>
      writeFile(join(w.workspace, "p.txt"), "p1\n"),
    );
    const middle = await w.say("p is p1 here");
    await rewind(w.store, w.id, { toSequence: target, mode: "files" });
    expect(await readFile(join(w.workspace, "p.txt"), "utf8")).toBe("p0\n");

    await rewind(w.store, w.id, { toSequence: middle, mode: "files" });

    expect(await readFile(join(w.workspace, "p.txt"), "utf8")).toBe("p1\n");
  });
});

describe("tampered checkpoints and swapped symlinks never reach outside the workspace", () => {
  it("records with ../ and absolute paths are skipped as outside_workspace; every file outside stays put", async () => {
    const s = await story();
    await writeFile(join(s.outside, "sentinel.txt"), "sentinel\n");
    await writeFile(join(s.outside, "doomed.txt"), "must survive\n");
    await writeFile(join(s.outside, "abs.txt"), "absolute sentinel\n");
    await writeFile(join(s.outside, "abs-doomed.txt"), "must survive too\n");
    const outsideBefore = await workspaceTree(s.outside);
    const baseMode = (await stat(join(s.outside, ".."))).mode;
    // A blob that exists, so nothing but the confinement stands between it and the outside file.
    const bytes = "old docs\n";
    const blob = { kind: "blob" as const, blob: sha256(bytes), bytes: bytes.length, mode: 0o644 };
    expect(s.blobsBefore).toContain(blob.blob);

    // Events appended by hand with paths no capture would ever record. They come after the
    // story's target, so for these paths they are the closest records.
    const tamperedAt = s.eventsBefore.at(-1)!.sequence + 1;
    await s.store.append(s.id, {
      type: "session_checkpoint",
      payload: {
        tool: "evil",
        workspace: s.workspace,
        files: [
          { path: "../outside/sentinel.txt", ...blob },
          { path: "../outside/doomed.txt", kind: "absent" },
          { path: "src/../../outside/sneaky.txt", ...blob },
          { path: join(s.outside, "abs.txt"), ...blob },
          { path: join(s.outside, "abs-doomed.txt"), kind: "absent" },
          { path: "..", kind: "directory", mode: 0o700 },
        ],
      },
    });

    const report = await rewind(s.store, s.id, { toSequence: s.target });

    const outsideChanges = report.changes.filter((c) => c.reason === "outside_workspace");
    expect(outsideChanges.map((c) => c.action)).toEqual(Array(6).fill("skip"));
    expect(outsideChanges.map((c) => c.path).sort()).toEqual(
      [
        "../outside/sentinel.txt",
        "../outside/doomed.txt",
        "src/../../outside/sneaky.txt",
        join(s.outside, "abs.txt"),
        join(s.outside, "abs-doomed.txt"),
        "..",
      ].sort(),
    );
    expect(report.skipped.sort()).toEqual(outsideChanges.map((c) => c.path).sort());
    expect(await workspaceTree(s.outside)).toEqual(outsideBefore);
    expect((await stat(join(s.outside, ".."))).mode).toBe(baseMode);
    // Everything legitimate was still rewound.
    expect(await workspaceTree(s.workspace)).toEqual(s.treeAtTarget);
    expect(report.markerSequence).toBe(tamperedAt + 1);
  });

  it.each([
    { what: "a file", record: (blob: string) => ({ path: ".", kind: "blob" as const, blob, bytes: 9, mode: 0o644 }) },
    { what: "a symlink", record: () => ({ path: ".", kind: "symlink" as const, target: "/" }) },
    { what: "nothing", record: () => ({ path: ".", kind: "absent" as const }) },
    { what: "nothing (spelled as an empty path)", record: () => ({ path: "", kind: "absent" as const }) },
  ])(
    "a record that would make the workspace itself $what is skipped: the workspace stays a folder with its files",
    async ({ record }) => {
      const w = await smallSession();
      await put(w.workspace, "keep.txt", "precious\n");
      const target = await w.say("target");
      await w.checkpoints.capture(w.id, { tool: "read", paths: ["keep.txt"] }); // stores the blob the record names
      await w.store.append(w.id, {
        type: "session_checkpoint",
        payload: { tool: "evil", workspace: w.workspace, files: [record(sha256("precious\n"))] },
      });

      const report = await rewind(w.store, w.id, { toSequence: target });

      expect(report.changes).toEqual([{ path: ".", action: "skip", reason: "workspace_root" }]);
      expect(report.skipped).toEqual(["."]);
      expect(await workspaceTree(w.workspace)).toEqual({ "keep.txt": 'file 644 "precious\\n"' });
    },
  );

  it("a folder swapped for a symlink out after capture: its paths are skipped, nothing outside touched", async () => {
    const w = await smallSession();
    await put(w.workspace, "link/file.txt", "inside v0\n");
    await put(w.outside, "file.txt", "outside sentinel\n");
    await put(w.outside, "gone.txt", "outside, must not be deleted\n");
    const target = await w.say("target");
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["link/file.txt", "link/gone.txt"] }, async () => {
      await writeFile(join(w.workspace, "link/file.txt"), "inside v1\n");
      await writeFile(join(w.workspace, "link/gone.txt"), "created after the target\n");
    });
    await rename(join(w.workspace, "link"), join(w.workspace, "moved"));
    await symlink(w.outside, join(w.workspace, "link"));
    const outsideBefore = await workspaceTree(w.outside);

    const report = await rewind(w.store, w.id, { toSequence: target });

    expect(report.changes).toEqual([
      { path: "link/file.txt", action: "skip", reason: "outside_workspace" },
      { path: "link/gone.txt", action: "skip", reason: "outside_workspace" },
    ]);
    expect(await workspaceTree(w.outside)).toEqual(outsideBefore);
    expect(await workspaceTree(w.workspace)).toMatchObject({ link: `link -> ${w.outside}` });
  });

  it("a file swapped for a symlink out is replaced (the link itself), never written or deleted through", async () => {
    const w = await smallSession();
    await put(w.workspace, "edited.txt", "v0\n");
    await put(w.outside, "victim.txt", "outside sentinel\n");
    await put(w.outside, "keep.txt", "outside, must survive\n");
    const target = await w.say("target");
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["edited.txt", "created.txt"] }, async () => {
      await writeFile(join(w.workspace, "edited.txt"), "v1\n");
      await writeFile(join(w.workspace, "created.txt"), "new\n");
    });
    const swap = async (name: string, to: string) => {
      await rename(join(w.workspace, name), join(w.workspace, `${name}.moved`));
      await symlink(join(w.outside, to), join(w.workspace, name));
    };
    await swap("edited.txt", "victim.txt");
    await swap("created.txt", "keep.txt");
    const outsideBefore = await workspaceTree(w.outside);

    // The swaps are conflicts (changed since the tool left them): overwriting them must still stay inside.
    const report = await rewind(w.store, w.id, { toSequence: target, onConflict: "overwrite" });

    expect(report.changes).toEqual([
      // created.txt is a symlink now (swapped in): no file to count; edited.txt is too, and gets v0 back.
      { path: "created.txt", action: "delete" },
      { path: "edited.txt", action: "restore", diff: { unit: "lines", insertions: 1, deletions: 0 } },
    ]);
    expect(await workspaceTree(w.outside)).toEqual(outsideBefore);
    const tree = await workspaceTree(w.workspace);
    expect(tree["edited.txt"]).toBe('file 644 "v0\\n"');
    expect(tree["created.txt"]).toBeUndefined();
  });

  it("a symlink swapped in after the plan is caught before the write: skipped, reported, nothing out", async () => {
    const w = await smallSession();
    await put(w.workspace, "dir/a.txt", "a0\n");
    await put(w.workspace, "other.txt", "o0\n");
    await put(w.outside, "a.txt", "outside sentinel\n");
    const target = await w.say("target");
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["dir/a.txt", "other.txt"] }, async () => {
      await writeFile(join(w.workspace, "dir/a.txt"), "a1\n");
      await writeFile(join(w.workspace, "other.txt"), "o1\n");
    });
    const outsideBefore = await workspaceTree(w.outside);

    const report = await rewind(w.store, w.id, {
      toSequence: target,
      onProgress: (step) => {
        if (step !== "planned") return;
        // Between the plan and the apply, as a racing process would.
        renameSync(join(w.workspace, "dir"), join(w.workspace, "dir.moved"));
        symlinkSync(w.outside, join(w.workspace, "dir"));
      },
    });

    const expected = [
      // dir/a.txt was planned with its diff; refused at the write, it changes nothing and counts nothing.
      { path: "dir/a.txt", action: "skip", reason: "outside_workspace" },
      { path: "other.txt", action: "restore", diff: { unit: "lines", insertions: 1, deletions: 1 } },
    ];
    expect(report.changes).toEqual(expected);
    expect(report).toMatchObject({ filesRestored: 1, skipped: ["dir/a.txt"] });
    expect((await w.store.readAll(w.id)).at(-1)!.payload).toMatchObject({
      changes: expected,
      filesRestored: 1,
      skipped: ["dir/a.txt"],
    });
    expect(await workspaceTree(w.outside)).toEqual(outsideBefore);
    expect(await readFile(join(w.workspace, "other.txt"), "utf8")).toBe("o0\n");
  });
});

describe("blobs", () => {
  it("a corrupt blob is skipped and reported blob_corrupt, its file left as it is; the rest is restored", async () => {
    const s = await story();
    await damageBlob(s.root, s.id, sha256("old docs\n"), "not the old docs\n");

    const report = await rewind(s.store, s.id, { toSequence: s.target });

    expect(report.changes).toEqual(
      STORY_CHANGES.map((c) =>
        c.path === "docs/guide/old.md" ? { path: c.path, action: "skip", reason: "blob_corrupt" } : c,
      ),
    );
    expect(report).toMatchObject({ skipped: ["docs/guide/old.md"], filesRestored: 7, filesDeleted: 1 });
    const { ["docs/guide/old.md"]: _restoredWouldBe, ...rest } = s.treeAtTarget;
    expect(await workspaceTree(s.workspace)).toEqual(rest); // old.md stays deleted, the rest is at the target
  });

  it("a missing blob is skipped and reported blob_missing", async () => {
    const w = await smallSession();
    await put(w.workspace, "a.txt", "a0\n");
    const target = await w.say("target");
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["a.txt"] }, () =>
      writeFile(join(w.workspace, "a.txt"), "a1\n"),
    );
    await lockedAccess(w.store).withLockedSession(w.id, (locked) => locked.deleteBlob(sha256("a0\n")));

    const report = await rewind(w.store, w.id, { toSequence: target });

    expect(report.changes).toEqual([{ path: "a.txt", action: "skip", reason: "blob_missing" }]);
    expect(await readFile(join(w.workspace, "a.txt"), "utf8")).toBe("a1\n");
  });

  it("prunes only what it orphaned: blobs of the log, marker or archive stay; gc takes the rest", async () => {
    const s = await story();
    // A blob nothing references that this rewind did not orphan: looking for such blobs would mean
    // reading the whole log on every rewind (docs/ARCHITECTURE.md, "Blobs"), so gc collects it.
    const orphan = Buffer.from("left behind by nobody\n");
    await lockedAccess(s.store).withLockedSession(s.id, (locked) => locked.writeBlob(sha256(orphan), orphan));

    const report = await rewind(s.store, s.id, { toSequence: s.target });

    expect(report.blobsPruned).toBe(0); // the archive keeps the cut checkpoints' blobs for the undo
    expect(new Set(await s.store.backend.listBlobs(s.id)).has(sha256(orphan))).toBe(true);
    await gc(s.store, { sessionIds: [s.id] });
    const onDisk = new Set(await s.store.backend.listBlobs(s.id));
    expect(onDisk.has(sha256(orphan))).toBe(false);
    // The archive holds the removed checkpoints, so every blob they reference stays.
    for (const hash of s.blobsBefore) expect(onDisk.has(hash), hash).toBe(true);
    const events = await s.store.readAll(s.id);
    const archived = await archivedEventsOf(s.store.backend, s.id, `rewind-archive-${report.markerSequence}`);
    expect(onDisk).toEqual(referencedBlobs([...events, ...archived]));
    // Among them the blobs of the marker's undo snapshot: main.ts at v5 and the created file.
    expect(onDisk.has(sha256("v5\n"))).toBe(true);
    expect(onDisk.has(sha256("export {};\n"))).toBe(true);
  });

  it("with keepUndo: 0 the blobs only the removed checkpoints referenced are pruned; no archive is kept", async () => {
    const s = await story();
    const report = await rewind(s.store, s.id, { toSequence: s.target, keepUndo: 0 });

    const events = await s.store.readAll(s.id);
    const stillReferenced = referencedBlobs(events);
    const onlyRemoved = s.blobsBefore.filter((hash) => !stillReferenced.has(hash));
    expect(onlyRemoved.length).toBeGreaterThan(0);
    expect(report.blobsPruned).toBe(onlyRemoved.length);
    expect(new Set(await s.store.backend.listBlobs(s.id))).toEqual(stillReferenced);
    expect((events.at(-1)!.payload as RewindPayload).undo).toBeUndefined();
    expect(await recordsLeft(s.store, s.id)).toEqual([]);
    // The workspace got the bytes before their blobs went.
    expect(await workspaceTree(s.workspace)).toEqual(s.treeAtTarget);
  });
});

describe("sequences", () => {
  it("the marker takes the number after the highest ever written; no number is used twice across rewinds", async () => {
    const w = await smallSession();
    await put(w.workspace, "a.txt", "a0\n");
    const target = await w.say("target");
    await w.checkpoints.around(w.id, { tool: "edit", paths: ["a.txt"] }, () =>
      writeFile(join(w.workspace, "a.txt"), "a1\n"),
    );
    const highest = await w.say("last before the rewind");

    const first = await rewind(w.store, w.id, { toSequence: target });
    expect(first.markerSequence).toBe(highest + 1);
    const next = await w.say("after the rewind");
    expect(next).toBe(highest + 2); // not target + 1, which the removed events used

    const second = await rewind(w.store, w.id, { toSequence: target });
    expect(second.markerSequence).toBe(next + 1);
    const third = await rewind(w.store, w.id, { toSequence: target, mode: "conversation" });
    expect(third.markerSequence).toBe(second.markerSequence! + 1);
    expect((await w.store.readAll(w.id)).map((e) => e.sequence)).toEqual([target, third.markerSequence]);
  });

  it("a target in a gap a rewind left is SEQUENCE_NOT_ON_TAPE (it once silently meant the event before)", async () => {
    const w = await smallSession();
    const target = await w.say("target");
    await w.say("removed");
    const { markerSequence } = await rewind(w.store, w.id, { toSequence: target });
    await w.say("after");

    await expectCode(rewind(w.store, w.id, { toSequence: markerSequence! - 1 }), "SEQUENCE_NOT_ON_TAPE");

    expect((await w.store.readAll(w.id)).map((e) => e.sequence)).toEqual([
      target,
      markerSequence!,
      markerSequence! + 1,
    ]);
  });

  it("a target past the end is SEQUENCE_OUT_OF_RANGE and changes nothing", async () => {
    const s = await story();
    const last = s.eventsBefore.at(-1)!.sequence;
    await expectCode(rewind(s.store, s.id, { toSequence: last + 1 }), "SEQUENCE_OUT_OF_RANGE");
    expect((await logBytes(s.root, s.id)).equals(s.logBytesBefore)).toBe(true);
    expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
  });

  it("a target at the end is a no-op report: no marker, nothing changed", async () => {
    const s = await story();
    const last = s.eventsBefore.at(-1)!.sequence;
    const report = await rewind(s.store, s.id, { toSequence: last });
    expect(report).toEqual({
      targetSequence: last,
      lastSequence: last,
      dryRun: false,
      mode: "all",
      filesRestored: 0,
      filesDeleted: 0,
      skipped: [],
      changes: [],
      diffTotals: { lines: { insertions: 0, deletions: 0 }, bytes: { insertions: 0, deletions: 0 } },
      eventsRemoved: 0,
      blobsPruned: 0,
    });
    expect((await logBytes(s.root, s.id)).equals(s.logBytesBefore)).toBe(true);
    expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
    expect(await recordsLeft(s.store, s.id)).toEqual([]);
  });
});

describe("bad input", () => {
  it("is refused with a typed error before anything is touched", async () => {
    const s = await story();
    await expectCode(rewind(s.store, s.id, { toSequence: -1 }), "INVALID_ARGUMENT");
    await expectCode(rewind(s.store, s.id, { toSequence: 1.5 }), "INVALID_ARGUMENT");
    await expectCode(
      rewind(s.store, s.id, { toSequence: s.target, mode: "everything" as RewindMode }),
      "INVALID_ARGUMENT",
    );
    await expectCode(rewind(s.store, s.id, { toSequence: s.target, keepUndo: -1 }), "INVALID_ARGUMENT");
    await expectCode(rewind(s.store, "no-such-session", { toSequence: 0 }), "SESSION_NOT_FOUND");
    await expectCode(
      rewind(s.store, s.id, { toSequence: s.target, workspace: join(s.workspace, "no-such-folder") }),
      "INVALID_ARGUMENT",
    );
    expect((await logBytes(s.root, s.id)).equals(s.logBytesBefore)).toBe(true);
    expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
  });

  it("a session without a workspace can rewind its conversation, and is told to pass one for its files", async () => {
    const base = await tempDir("agent-tape-rewind-nows-");
    const store = openStore({ root: base });
    const { id } = await store.create();
    const target = (await store.append(id, { type: "message", payload: { role: "user", content: "a" } })).sequence;
    await store.append(id, { type: "message", payload: { role: "user", content: "b" } });
    await expectCode(rewind(store, id, { toSequence: target }), "INVALID_ARGUMENT");
    await expect(rewind(store, id, { toSequence: target, mode: "conversation" })).resolves.toMatchObject({
      eventsRemoved: 1,
    });
  });
});
