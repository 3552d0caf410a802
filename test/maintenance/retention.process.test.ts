// In the process tier: one test holds a session's lock from a real child process.
import { randomBytes } from "node:crypto";
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CheckpointStore,
  type SessionStore,
  applyRetention,
  gc,
  isAgentTapeError,
  rewind,
  undoRewind,
  usage,
  verify,
} from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

const DAY_MS = 24 * 60 * 60 * 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function retentionStore(options: { lockStaleMs?: number; lockWaitMs?: number } = {}) {
  const base = await tempDir("agent-tape-retention-");
  const root = join(base, "root");
  const workspace = join(base, "workspace");
  await mkdir(workspace);
  // lockIdleMs 0: the store gives each lock up at once, so only the child's lock counts as held.
  const store = openStore({ root, lockIdleMs: 0, ...options });
  return { store, root, workspace, checkpoints: new CheckpointStore(store, { afterState: false }) };
}

/** Three sessions a, b, c made in that order a few ms apart, each with one message (c the newest). */
async function threeSessions(store: SessionStore) {
  const ids: string[] = [];
  for (const name of ["a", "b", "c"]) {
    await store.create({ id: name });
    await store.append(name, { type: "message", payload: { role: "user", content: name.repeat(1000) } });
    ids.push(name);
    await sleep(5);
  }
  return ids;
}

const remaining = async (store: SessionStore) => (await store.list()).map((s) => s.id).sort();

describe("retention: which sessions go", () => {
  it("maxAgeDays deletes the sessions with no event since the cutoff, and a dry run only reports it", async () => {
    const { store } = await retentionStore();
    await threeSessions(store);
    const b = (await store.get("b"))!;
    // The cutoff is b's last event: a is older, b is not.
    const now = new Date(Date.parse(b.updatedAt) + DAY_MS);
    const dry = await applyRetention(store, { maxAgeDays: 1 }, { now, dryRun: true });
    expect(dry.deleted.map((d) => [d.sessionId, d.reason])).toEqual([["a", "age"]]);
    expect(await remaining(store)).toEqual(["a", "b", "c"]);

    const real = await applyRetention(store, { maxAgeDays: 1 }, { now });
    expect(real.deleted.map((d) => [d.sessionId, d.reason])).toEqual([["a", "age"]]);
    expect(real.deleted[0]!.bytes).toBeGreaterThan(1000);
    expect(real.bytesFreed).toBe(real.deleted[0]!.bytes);
    expect(await remaining(store)).toEqual(["b", "c"]);
  });

  it("keepNewest keeps the most recently active; maxTotalBytes deletes the least recently active first", async () => {
    const { store } = await retentionStore();
    await threeSessions(store);
    // a is touched last, so it is the newest now: b is the oldest.
    await store.append("a", { type: "message", payload: { role: "user", content: "again" } });
    expect((await applyRetention(store, { keepNewest: 2 })).deleted.map((d) => [d.sessionId, d.reason])).toEqual([
      ["b", "count"],
    ]);
    expect(await remaining(store)).toEqual(["a", "c"]);

    const sizeOfA = (await usage(store, "a")).total;
    const sizeOfC = (await usage(store, "c")).total;
    // Room for one of the two: c (the older) goes.
    const report = await applyRetention(store, { maxTotalBytes: Math.max(sizeOfA, sizeOfC) + 10 });
    expect(report.deleted).toEqual([{ sessionId: "c", reason: "bytes", bytes: sizeOfC }]);
    expect(await remaining(store)).toEqual(["a"]);
  });

  it("never deletes a session a live process holds the lock of; deleted once the holder dies (1 round)", async () => {
    // lockWaitMs 300: gc's collect step gives up on the held session soon (reported in failed as LOCKED).
    const { store, root } = await retentionStore({ lockStaleMs: 2000, lockWaitMs: 300 });
    await threeSessions(store);
    const holder = new Child("hold-session-lock.ts", [root, "a", "2000"]);
    children.push(holder);
    await holder.waitForLine((line) => line === "locked");

    const report = await gc(store, { retention: { keepNewest: 1 } });
    expect(report.retention!.deleted.map((d) => d.sessionId)).toEqual(["b"]);
    expect(report.retention!.held).toEqual([{ sessionId: "a", reason: "count" }]);
    expect(report.failed).toMatchObject([{ sessionId: "a", code: "LOCKED" }]);
    expect(await remaining(store)).toEqual(["a", "c"]);
    expect((await store.readAll("a")).length).toBe(1);

    // Killed: its lock is taken over and the session deleted, at once where the dead holder is known for sure
    // (this machine's /proc), else once stale after lockStaleMs (mtime is coarse on some filesystems: poll).
    holder.kill();
    await holder.done();
    const killedAt = Date.now();
    let later = await applyRetention(store, { keepNewest: 1 });
    while (later.deleted.length === 0 && Date.now() - killedAt < 8000) {
      await sleep(200);
      later = await applyRetention(store, { keepNewest: 1 });
    }
    expect(later.deleted.map((d) => d.sessionId)).toEqual(["a"]);
    expect(later.held).toEqual([]);
    expect(await remaining(store)).toEqual(["c"]);
  });

  it("refuses a policy with a negative or non-numeric limit", async () => {
    const { store } = await retentionStore();
    for (const policy of [{ maxAgeDays: -1 }, { keepNewest: 1.5 }, { maxTotalBytes: Number.NaN }]) {
      const error = await applyRetention(store, policy).catch((e: unknown) => e);
      expect(isAgentTapeError(error, "INVALID_ARGUMENT")).toBe(true);
    }
  });
});

describe("retention: old checkpoints dropped, the conversation kept", () => {
  /**
   * 1 message, 2 checkpoint of a.txt (1000 random bytes), a.txt = "v2", [cutoff], 3 message,
   * 4 checkpoint of a.txt ("v2") and b.txt (absent), a.txt = "v3", b.txt = "new", 5 message.
   */
  async function story() {
    const s = await retentionStore();
    const { store, checkpoints, workspace } = s;
    const id = (await store.create({ workspace })).id;
    const file = (name: string) => join(workspace, name);
    await store.append(id, { type: "message", payload: { role: "user", content: "first" } });
    // Random bytes: incompressible, so its blob is stored raw and dropping it frees all 1000 bytes.
    await writeFile(file("a.txt"), randomBytes(1000));
    await checkpoints.capture(id, { tool: "edit", paths: ["a.txt"] });
    await writeFile(file("a.txt"), "v2".repeat(500));
    await sleep(10);
    const cutoff = Date.now();
    await sleep(10);
    await store.append(id, { type: "message", payload: { role: "user", content: "second" } });
    await checkpoints.capture(id, { tool: "edit", paths: ["a.txt", "b.txt"] });
    await writeFile(file("a.txt"), "v3");
    await writeFile(file("b.txt"), "new");
    await store.append(id, { type: "message", payload: { role: "user", content: "third" } });
    return { ...s, id, file, now: new Date(cutoff + DAY_MS) };
  }

  it("drops the checkpoints before the cutoff and their blobs; the log and later checkpoints stay", async () => {
    const { store, id, now } = await story();
    const before = await usage(store, id);
    expect(before.blobCount).toBe(2);

    const report = await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now });
    expect(report.trimmed).toMatchObject([{ sessionId: id, horizon: 2, checkpointsDropped: 1 }]);
    expect(report.trimmed[0]!.blobsDropped).toHaveLength(1);
    // The 1000-byte blob, less the horizon record written beside it (about 130 bytes with its throughId).
    expect(report.trimmed[0]!.bytesFreed).toBeGreaterThan(850);
    expect(report.trimmed[0]!.bytesFreed).toBeLessThan(1000);
    const after = await usage(store, id);
    expect(after.blobCount).toBe(1);
    expect(after.log).toBe(before.log);
    expect((await store.readAll(id)).map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect((await verify(store, id)).problems).toEqual([]);
    // Again: nothing more to drop.
    expect((await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now })).trimmed).toEqual([]);
  });

  it("a rewind of files to before the horizon is BEYOND_RETENTION_HORIZON and changes nothing", async () => {
    const { store, id, now, file } = await story();
    await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now });

    const error = await rewind(store, id, { toSequence: 1 }).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "BEYOND_RETENTION_HORIZON")).toBe(true);
    expect((error as Error).message).toContain("through event 2");
    expect(await readFile(file("a.txt"), "utf8")).toBe("v3");
    expect(await readFile(file("b.txt"), "utf8")).toBe("new");
    expect((await store.readAll(id)).length).toBe(5);
    const dry = await rewind(store, id, { toSequence: 1, dryRun: true, mode: "files" }).catch((e: unknown) => e);
    expect(isAgentTapeError(dry, "BEYOND_RETENTION_HORIZON")).toBe(true);

    // To the horizon or later: the checkpoints it needs are whole.
    const report = await rewind(store, id, { toSequence: 3 });
    expect(report.filesRestored + report.filesDeleted).toBe(2);
    expect(await readFile(file("a.txt"), "utf8")).toBe("v2".repeat(500));
    // The conversation alone can go back past it.
    const talk = await rewind(store, id, { toSequence: 1, mode: "conversation" });
    expect(talk.eventsRemoved).toBe(3);
  });

  it("a fork inherits the horizon: its own rewind to before it is refused too", async () => {
    const { store, id, now } = await story();
    await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now });
    const fork = await store.fork(id);
    const error = await rewind(store, fork.id, { toSequence: 1 }).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "BEYOND_RETENTION_HORIZON")).toBe(true);
    expect((await verify(store, fork.id)).problems).toEqual([]);
  });
});

describe("retention, then a conversation rewind and its undo", () => {
  // The undo puts the dropped checkpoint back under a new sequence above the horizon: what retention dropped
  // is known by the checkpoint itself (docs/ARCHITECTURE.md, "Retention"), not by where it now stands.
  it("verify finds no blob missing; a files rewind to before the re-appended checkpoint is refused whole", async () => {
    const s = await retentionStore();
    const { store, checkpoints, workspace } = s;
    const id = (await store.create({ workspace })).id;
    const file = (name: string) => join(workspace, name);
    await store.append(id, { type: "message", payload: { role: "user", content: "first" } });
    await writeFile(file("a.txt"), randomBytes(1000));
    await checkpoints.capture(id, { tool: "edit", paths: ["a.txt"] });
    await writeFile(file("a.txt"), "v2");
    await sleep(10);
    const cutoff = Date.now();
    await sleep(10);
    await store.append(id, { type: "message", payload: { role: "user", content: "second" } });
    await checkpoints.capture(id, { tool: "edit", paths: ["a.txt", "b.txt"] });
    await writeFile(file("a.txt"), "v3");
    await writeFile(file("b.txt"), "new");
    const report = await applyRetention(store, { checkpointMaxAgeDays: 1 }, { now: new Date(cutoff + DAY_MS) });
    expect(report.trimmed).toMatchObject([{ sessionId: id, horizon: 2 }]);

    await rewind(store, id, { toSequence: 1, mode: "conversation" });
    await undoRewind(store, id);
    const events = await store.readAll(id);
    const dropped = events.find((e) => e.type === "session_checkpoint")!;
    expect(dropped.sequence).toBeGreaterThan(2); // back, under a new number above the horizon

    expect((await verify(store, id)).problems).toEqual([]);
    const error = await rewind(store, id, { toSequence: dropped.sequence - 1, mode: "files" }).catch((e) => e);
    expect(isAgentTapeError(error, "BEYOND_RETENTION_HORIZON"), String(error)).toBe(true);
    expect(await readFile(file("a.txt"), "utf8")).toBe("v3");
    expect(await readFile(file("b.txt"), "utf8")).toBe("new");
    // The later checkpoint kept its blobs: a files rewind to just before it still works.
    const later = events.filter((e) => e.type === "session_checkpoint")[1]!;
    const done = await rewind(store, id, { toSequence: later.sequence - 1, mode: "files" });
    expect(done.filesRestored + done.filesDeleted).toBe(2);
    expect(await readFile(file("a.txt"), "utf8")).toBe("v2");
  });
});

describe("usage", () => {
  it("reports the log, blobs and records apart, adding up to sizeOf", async () => {
    const { store, workspace, checkpoints } = await retentionStore();
    const id = (await store.create({ workspace })).id;
    await writeFile(join(workspace, "x.txt"), "x".repeat(3000));
    await checkpoints.capture(id, { tool: "edit", paths: ["x.txt"] });
    await rewind(store, id, { toSequence: 0 });
    const u = await usage(store, id);
    expect(u.sessionId).toBe(id);
    expect(u.blobCount).toBe(1);
    expect(u.blobs).toBeGreaterThan(0);
    expect(u.records).toBeGreaterThan(0); // the rewind archive
    expect(u.log).toBe((await readFile(join(store.backend.localFolder!, id, "events.jsonl"))).length);
    expect(u.log + u.blobs + u.records + u.other).toBe(u.total);
    expect(u.total).toBe(await store.backend.sizeOf!(id));
    const missing = await usage(store, "nope").catch((e: unknown) => e);
    expect(isAgentTapeError(missing, "SESSION_NOT_FOUND")).toBe(true);
  });
});
