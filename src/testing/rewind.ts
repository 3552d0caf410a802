import { tmpdir } from "node:os";
import { beforeEach, describe, expect, it } from "vitest";
import type { StorageBackend } from "../backend/types.js";
import type { StoredEvent } from "../core/events.js";
import { CheckpointStore, rewind, SessionStore, undoRewind } from "../index.js";
import { BLOBS_IN_FLIGHT_RECORD, blob, blobsNamedBy, checkpoint, expectCode, range, withLock } from "./fixtures.js";
import { editSession, folderTree, put, useWorkspaces, type EditedSession } from "./workspace.js";
import { runAreas, type BackendConformanceOptions, type ConformanceArea, type ConformanceSuite } from "./suite.js";

/**
 * The library over the backend: a SessionStore (create, append, fork, delete, two stores at once),
 * checkpoints captured from a real workspace folder, rewind and undoRewind.
 */
export const rewindArea: ConformanceArea = (suite) => {
  describe("a SessionStore on this backend", () => {
    writingAndReading(suite);
    forkingAndDeleting(suite);
  });

  describe("checkpoints, rewind and undo over this backend", () => {
    const workspaces = useWorkspaces();
    capturingAndRewinding(suite, workspaces);
    dryRunsPruningAndForks(suite, workspaces);
  });
};

/** Registers (with vitest) the checkpoint + rewind + undo area alone; `runBackendConformance` runs every area. */
export function runRewindConformance(options: BackendConformanceOptions): void {
  runAreas(options, [rewindArea]);
}

type Workspaces = ReturnType<typeof useWorkspaces>;

/** A session that edited files of a real workspace, its store closed after the test. */
async function edited(backend: StorageBackend, workspaces: Workspaces): Promise<EditedSession> {
  const s = await editSession(backend, await workspaces.make());
  workspaces.track(s.store);
  return s;
}

const upTo = (events: StoredEvent[], sequence: number) => events.filter((e) => e.sequence <= sequence);

/** Sessions created, appended to and read through a SessionStore, by one store and by two at once. */
function writingAndReading(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  it("creates, appends, reads and lists sessions", async () => {
    const store = new SessionStore({ backend });
    const first = await store.create({ id: "first", title: "first session" });
    const second = await store.create({ id: "second" });
    expect(first).toMatchObject({ id: "first", title: "first session", lastSequence: 0 });

    const appended = await store.append(first.id, { type: "message", payload: { role: "user", content: "hi" } });
    expect(appended).toMatchObject({ sessionId: "first", sequence: 1, type: "message" });
    const many = await store.appendMany(first.id, [
      { type: "tool_call", payload: { callId: "c1", name: "read_file", input: { path: "a.ts" } } },
      { type: "tool_result", payload: { callId: "c1", output: "contents" } },
    ]);
    expect(many.map((e) => e.sequence)).toEqual([2, 3]);
    await expectCode(
      store.append(first.id, { type: "message", payload: { role: "nobody", content: 1 } } as never),
      "INVALID_EVENT",
    );

    const all = await store.readAll(first.id);
    expect(all.map((e) => [e.sequence, e.type])).toEqual([
      [1, "message"],
      [2, "tool_call"],
      [3, "tool_result"],
    ]);
    expect(all[0]).toEqual(appended);
    expect((await store.readAll(first.id, { fromSequence: 2, types: ["tool_result"] })).map((e) => e.sequence)).toEqual(
      [3],
    );
    expect(await store.get(first.id)).toMatchObject({
      lastSequence: 3,
      title: "first session",
      updatedAt: all[2]!.createdAt,
    });
    expect(await store.get("missing")).toBeUndefined();
    expect((await store.list()).map((s) => s.id).sort()).toEqual([first.id, second.id].sort());
    await store.close();
  });

  it("two stores sharing the backend append to one session without losing or interleaving events", async () => {
    const a = new SessionStore({ backend });
    const b = new SessionStore({ backend });
    const { id } = await a.create({ id: "shared" });
    const perStore = 15;
    const write = (store: SessionStore, name: string) =>
      Promise.all(
        range(1, perStore).map((i) =>
          store.append(id, { type: "message", payload: { role: "user", content: `${name}-${i}` } }),
        ),
      );
    await Promise.all([write(a, "a"), write(b, "b")]);
    const events = await a.readAll(id);
    expect(events.map((e) => e.sequence)).toEqual(range(1, perStore * 2));
    const contents = events.map((e) => (e.payload as { content: string }).content);
    for (const name of ["a", "b"]) {
      expect(contents.filter((c) => c.startsWith(`${name}-`))).toEqual(range(1, perStore).map((i) => `${name}-${i}`));
    }
    await a.close();
    await b.close();
  });
}

/** A fork carries its log prefix and the blobs it needs; a deleted session is gone. */
function forkingAndDeleting(suite: ConformanceSuite): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  it("forks the log prefix with a session_fork event and the blobs its checkpoints need", async () => {
    const store = new SessionStore({ backend });
    // Any existing folder: create refuses a missing workspace; nothing here touches it.
    const parent = await store.create({ id: "parent", title: "parent", workspace: tmpdir() });
    const before = blob("export const a = 1;\n");
    const later = blob("export const a = 2;\n");
    await store.append(parent.id, { type: "message", payload: { role: "user", content: "edit a.ts" } });
    await withLock(backend, parent.id, async (locked) => {
      await locked.writeBlob(before.hash, before.bytes);
      await locked.writeBlob(later.hash, later.bytes);
    });
    await store.append(parent.id, { type: "session_checkpoint", payload: checkpoint(before.hash) });
    await store.append(parent.id, { type: "message", payload: { role: "assistant", content: "done" } });
    await store.append(parent.id, { type: "session_checkpoint", payload: checkpoint(later.hash) });

    const child = await store.fork(parent.id, { id: "child", atSequence: 2 });
    expect(child).toMatchObject({
      id: "child",
      title: "parent",
      workspace: tmpdir(),
      parent: { id: "parent", atSequence: 2 },
      lastSequence: 3,
    });
    const events = await store.readAll(child.id);
    expect(events.map((e) => [e.sequence, e.type, e.sessionId])).toEqual([
      [1, "message", "child"],
      [2, "session_checkpoint", "child"],
      [3, "session_fork", "child"],
    ]);
    expect(events[2]?.payload).toEqual({ parentId: "parent", atSequence: 2 });
    expect(await backend.listBlobs(child.id)).toEqual([before.hash]);
    expect(await backend.readBlob(child.id, before.hash)).toEqual(Buffer.from(before.bytes));
    expect((await store.readAll(parent.id)).map((e) => e.sequence)).toEqual([1, 2, 3, 4]);

    await store.append(child.id, { type: "message", payload: { role: "user", content: "on the fork" } });
    expect((await store.get(child.id))?.lastSequence).toBe(4);
    expect((await store.get(parent.id))?.lastSequence).toBe(4);
    await store.close();
  });

  it("deletes a session", async () => {
    const store = new SessionStore({ backend });
    const { id } = await store.create({ id: "gone" });
    await store.append(id, { type: "message", payload: { role: "user", content: "bye" } });
    expect(await store.delete(id)).toBe(true);
    expect(await store.get(id)).toBeUndefined();
    expect(await store.delete(id)).toBe(false);
    expect(await backend.listSessionIds()).toEqual([]);
    await store.close();
  });
}

/** Capture into this backend's blobs; rewind in each mode, and undo. */
function capturingAndRewinding(suite: ConformanceSuite, workspaces: Workspaces): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  it("capture keeps the before-bytes of real files as this backend's blobs; readBlob gives them back", async () => {
    const workspace = await workspaces.make();
    await put(workspace, "a.txt", "alpha\n");
    await put(workspace, "dir/b.txt", "beta\n", 0o600);
    const store = workspaces.track(new SessionStore({ backend }));
    const checkpoints = new CheckpointStore(store);
    const { id } = await store.create({ workspace });
    const captured = await checkpoints.capture(id, { tool: "edit_file", paths: ["a.txt", "dir", "missing.txt"] });
    const files = captured!.payload.files;
    const byPath = new Map(files.map((f) => [f.path, f]));
    expect(byPath.get("missing.txt")).toEqual({ path: "missing.txt", kind: "absent" });
    const contents: Record<string, string> = { "a.txt": "alpha\n", "dir/b.txt": "beta\n" };
    for (const [path, text] of Object.entries(contents)) {
      const snapshot = byPath.get(path);
      expect(snapshot?.kind, path).toBe("blob");
      const hash = (snapshot as { blob: string }).blob;
      expect((await checkpoints.readBlob(id, hash)).toString("utf8")).toBe(text);
      expect(await backend.readBlob(id, hash)).toEqual(Buffer.from(text));
    }
    expect((await backend.listBlobs(id)).sort()).toEqual([...blobsNamedBy([captured!])].sort());
    expect(await store.readAll(id)).toEqual([captured]);
  });

  it('rewind "all" puts the files back, cuts the log to the target plus a marker; undo puts both back', async () => {
    const s = await edited(backend, workspaces);
    const last = s.eventsAfter.at(-1)!.sequence;
    const removed = s.eventsAfter.filter((e) => e.sequence > s.target);
    const report = await rewind(s.store, s.id, { toSequence: s.target });
    expect(report).toMatchObject({ mode: "all", eventsRemoved: removed.length, markerSequence: last + 1 });
    expect(await folderTree(s.workspace)).toEqual(s.treeAtTarget);
    const events = await s.store.readAll(s.id);
    expect(events.slice(0, -1)).toEqual(upTo(s.eventsAfter, s.target));
    expect(events.at(-1)).toMatchObject({ type: "session_rewind", sequence: last + 1 });

    const undo = await undoRewind(s.store, s.id);
    expect(await folderTree(s.workspace)).toEqual(s.treeAfter);
    const afterUndo = await s.store.readAll(s.id);
    const reappended = afterUndo.filter((e) => e.sequence > last + 1 && e.sequence < undo.markerSequence!);
    expect(reappended).toEqual(removed.map((e, i) => ({ ...e, sequence: last + 2 + i })));
    // The undo marker names the events' former sequences as runs: here one, the numbers after the target.
    expect(removed.map((e) => e.sequence)).toEqual(removed.map((_, i) => s.target + 1 + i));
    expect(afterUndo.at(-1)).toMatchObject({
      type: "session_rewind",
      payload: { undoOf: last + 1, reappendedRanges: [[s.target + 1, last]] },
    });
    expect(await backend.listRecords(s.id)).not.toContain("rewind-intent");
  });

  it('rewind "files" keeps every event; rewind "conversation" leaves every file as it is', async () => {
    const s = await edited(backend, workspaces);
    await rewind(s.store, s.id, { toSequence: s.target, mode: "files" });
    expect(await folderTree(s.workspace)).toEqual(s.treeAtTarget);
    expect((await s.store.readAll(s.id)).slice(0, -1)).toEqual(s.eventsAfter);

    const t = await edited(backend, workspaces);
    await rewind(t.store, t.id, { toSequence: t.target, mode: "conversation" });
    expect(await folderTree(t.workspace)).toEqual(t.treeAfter);
    expect((await t.store.readAll(t.id)).slice(0, -1)).toEqual(upTo(t.eventsAfter, t.target));
  });
}

/** A dry run changes nothing; keepUndo 0 prunes only what nothing references; a fork rewinds from its own blobs. */
function dryRunsPruningAndForks(suite: ConformanceSuite, workspaces: Workspaces): void {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  it("a dry run reports the plan and changes nothing: files, log, blobs and records stay as they were", async () => {
    const s = await edited(backend, workspaces);
    const blobs = (await backend.listBlobs(s.id)).sort();
    // The blobs-in-flight note comes and goes with the store's lease, not with the dry run.
    const records = async () =>
      (await backend.listRecords(s.id)).filter((name) => name !== BLOBS_IN_FLIGHT_RECORD).sort();
    const recordsBefore = await records();
    const report = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true });
    expect(report.dryRun).toBe(true);
    expect(report.changes.length).toBeGreaterThan(0);
    expect(await folderTree(s.workspace)).toEqual(s.treeAfter);
    expect(await s.store.readAll(s.id)).toEqual(s.eventsAfter);
    expect((await backend.listBlobs(s.id)).sort()).toEqual(blobs);
    expect(await records()).toEqual(recordsBefore);
  });

  it("keepUndo 0: a rewind deletes the blobs the log no longer references, keeps every one it does", async () => {
    const s = await edited(backend, workspaces);
    const before = await backend.listBlobs(s.id);
    const report = await rewind(s.store, s.id, { toSequence: s.target, keepUndo: 0 });
    const kept = (await backend.listBlobs(s.id)).sort();
    expect(kept).toEqual([...blobsNamedBy(await s.store.readAll(s.id))].sort());
    expect(report.blobsPruned).toBe(before.length - kept.length);
    expect(report.blobsPruned).toBeGreaterThan(0);
  });

  it("a fork carries the blobs its checkpoints need: rewinding it restores files from its own blobs", async () => {
    const s = await edited(backend, workspaces);
    const fork = await s.store.fork(s.id, { id: "fork" });
    // The parent's blobs go: the fork must not depend on them.
    await withLock(backend, s.id, async (locked) => {
      for (const hash of await backend.listBlobs(s.id)) await locked.deleteBlob(hash);
    });
    await rewind(s.store, fork.id, { toSequence: s.target });
    expect(await folderTree(s.workspace)).toEqual(s.treeAtTarget);
  });
}
