// In the process tier: one test holds a session lock from a real child process.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gc, isAgentTapeError, rewind, undoRewind, verify } from "../../src/index.js";
import { memoryBackend } from "../../src/backend/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { BACKENDS, plantOrphanBlob, seed, sha256, type Seeded } from "./sessions.js";
import { closeAfter, openStore } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

async function seeded(...args: Parameters<typeof seed>): Promise<Seeded> {
  const s = await seed(...args);
  closeAfter(s);
  return s;
}

const archives = async (s: Seeded) =>
  (await s.store.backend.listRecords(s.id)).filter((name) => name.startsWith("rewind-archive-")).sort();
const blobsOf = async (s: Seeded) => (await s.store.backend.listBlobs(s.id)).sort();

describe.each(BACKENDS)("gc (%s backend)", (kind) => {
  it("a dry run reports the orphan blob and its bytes and deletes nothing; the real run frees the same", async () => {
    const s = await seeded(kind);
    const orphan = await plantOrphanBlob(s, "left by a crash: 31 bytes long\n");
    const referenced = sha256("one\n");
    expect(await blobsOf(s)).toEqual([orphan, referenced].sort());

    const dry = await gc(s.store, { dryRun: true });
    // As stored: on fs, an entry of the session's pack, its 52-byte header and the 31 bytes (too few to compress).
    const freed = kind === "fs" ? 52 + 31 : 31;
    expect(dry).toEqual({
      dryRun: true,
      sessions: [{ sessionId: s.id, orphanBlobs: [orphan], expiredArchives: [], leftoverFiles: [], bytesFreed: freed }],
      failed: [],
      orphanBlobs: 1,
      expiredArchives: 0,
      bytesFreed: freed,
    });
    expect(await blobsOf(s)).toEqual([orphan, referenced].sort());

    const real = await gc(s.store);
    expect(real).toEqual({ ...dry, dryRun: false });
    expect(await blobsOf(s)).toEqual([referenced]);
    expect((await verify(s.store, s.id)).ok).toBe(true);
    expect((await gc(s.store)).sessions).toEqual([
      { sessionId: s.id, orphanBlobs: [], expiredArchives: [], leftoverFiles: [], bytesFreed: 0 },
    ]);
  });

  it("a dry run counts an orphan blob as stored (compressed on the fs backend): what the real run frees", async () => {
    const s = await seeded(kind);
    const text = "the same line, over and over, compresses well\n".repeat(200); // 9.4 KB
    await plantOrphanBlob(s, text);
    const dry = await gc(s.store, { dryRun: true });
    const real = await gc(s.store);
    expect(real.bytesFreed).toBeGreaterThan(0);
    expect(dry.bytesFreed).toBe(real.bytesFreed);
    if (kind === "fs") expect(real.bytesFreed).toBeLessThan(text.length / 10); // it was stored compressed
  });

  it("drops the rewind archives older than the newest with the blobs only they needed; undo still works", async () => {
    const s = await seeded(kind);
    // Rewind 1 cuts checkpoint #2, the only event naming the blob of "one\n" once its archive goes.
    await rewind(s.store, s.id, { toSequence: 1, keepUndo: 2 });
    await s.store.append(s.id, { type: "message", payload: { role: "user", content: "something else" } });
    await rewind(s.store, s.id, { toSequence: 4, keepUndo: 2 });
    expect(await archives(s)).toEqual(["rewind-archive-4", "rewind-archive-6"]);

    const report = await gc(s.store, { sessionIds: [s.id] });
    expect(report.sessions).toMatchObject([
      { sessionId: s.id, orphanBlobs: [sha256("one\n")], expiredArchives: ["rewind-archive-4"] },
    ]);
    expect(report.bytesFreed).toBeGreaterThan(4);
    expect(await archives(s)).toEqual(["rewind-archive-6"]);
    expect(await blobsOf(s)).not.toContain(sha256("one\n"));
    expect((await verify(s.store, s.id)).ok).toBe(true);
    await expect(undoRewind(s.store, s.id)).resolves.toMatchObject({});
  });

  it("collects only the sessions named, and reports a named one that does not exist", async () => {
    const a = await seeded(kind);
    const orphanA = await plantOrphanBlob(a, "orphan of a");
    const { id: b } = await a.store.create();
    const report = await gc(a.store, { sessionIds: [b, "missing"] });
    expect(report.sessions).toEqual([
      { sessionId: b, orphanBlobs: [], expiredArchives: [], leftoverFiles: [], bytesFreed: 0 },
    ]);
    expect(report.failed).toMatchObject([{ sessionId: "missing", code: "SESSION_NOT_FOUND" }]);
    expect(isAgentTapeError(report.failed[0]!.error, "SESSION_NOT_FOUND")).toBe(true);
    expect(await blobsOf(a)).toContain(orphanA);
  });

  it("rejects with the signal's reason when aborted, deleting nothing", async () => {
    const s = await seeded(kind);
    const orphan = await plantOrphanBlob(s, "orphan");
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    await expect(gc(s.store, { signal: controller.signal })).rejects.toThrow("stop");
    expect(await blobsOf(s)).toContain(orphan);
  });
});

describe("gc: bytes", () => {
  it("are undefined when the backend cannot tell (no sizeOf), and the blobs still go", async () => {
    const inner = memoryBackend();
    // The same backend, minus its optional sizeOf.
    const backend = Object.assign(Object.create(inner) as typeof inner, { sizeOf: undefined });
    const s = await seeded("memory", { backend });
    const orphan = await plantOrphanBlob(s, "orphan");
    const report = await gc(s.store);
    expect(report.bytesFreed).toBeUndefined();
    expect(report.sessions).toEqual([
      { sessionId: s.id, orphanBlobs: [orphan], expiredArchives: [], leftoverFiles: [], bytesFreed: undefined },
    ]);
    expect(await blobsOf(s)).not.toContain(orphan);
  });
});

describe("gc: sessions it must not touch (fs backend)", () => {
  it("leaves a session whose tape cannot be read, reports LOG_CORRUPT, and collects the others", async () => {
    const good = await seeded("fs");
    const bad = await seeded("fs", { root: good.root! });
    const goodOrphan = await plantOrphanBlob(good, "orphan");
    const badOrphan = await plantOrphanBlob(bad, "orphan too");
    const log = join(bad.root!, bad.id, "events.jsonl");
    await writeFile(log, "not a line of json\n" + (await readFile(log, "utf8")));
    // A stray folder under the root is no session: not reported.
    await mkdir(join(good.root!, "not-a-session"));

    const report = await gc(good.store);
    expect(report.sessions.map((c) => [c.sessionId, c.orphanBlobs])).toEqual([[good.id, [goodOrphan]]]);
    expect(report.failed).toMatchObject([{ sessionId: bad.id, code: "LOG_CORRUPT" }]);
    // A tape that cannot be read cannot say which blobs it needs: nothing of it is deleted.
    expect(await blobsOf(bad)).toContain(badOrphan);
  });

  it("never touches a session whose lock a live process keeps: LOCKED, orphan still there (1 round)", async () => {
    const s = await seeded("fs");
    const orphan = await plantOrphanBlob(s, "orphan");
    await s.store.close(); // its idle lease would otherwise keep the lock from the child
    const store = openStore({ backend: s.store.backend, lockWaitMs: 300 });
    closeAfter({ ...s, store, close: () => store.close() });
    const holder = new Child("hold-lock.ts", [s.root!, s.id]);
    children.push(holder);
    await holder.waitForLine((line) => line.startsWith("held"));

    const report = await gc(store);
    expect(report.sessions).toEqual([]);
    expect(report.failed).toMatchObject([{ sessionId: s.id, code: "LOCKED" }]);
    expect(await store.backend.listBlobs(s.id)).toContain(orphan);

    holder.endInput();
    await holder.done();
    expect((await gc(store)).sessions).toMatchObject([{ sessionId: s.id, orphanBlobs: [orphan] }]);
  });
});
