import { beforeEach, describe, expect, it } from "vitest";
import type { StorageBackend } from "../backend/types.js";
import { SessionStore } from "../session/session-store.js";
import { blob, checkpoint, expectCode, range } from "./fixtures.js";
import { runAreas, type BackendConformanceOptions, type ConformanceArea } from "./suite.js";

/**
 * The library over the backend: a SessionStore (create, append, fork, delete, two stores at once),
 * checkpoints captured from a real workspace folder, rewind and undoRewind.
 */
export const rewindArea: ConformanceArea = (suite) => {
  let backend!: StorageBackend;
  beforeEach(() => {
    backend = suite.backend;
  });

  describe("a SessionStore on this backend", () => {
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
      expect(
        (await store.readAll(first.id, { fromSequence: 2, types: ["tool_result"] })).map((e) => e.sequence),
      ).toEqual([3]);
      expect(await store.get(first.id)).toMatchObject({
        lastSequence: 3,
        title: "first session",
        updatedAt: all[2]!.createdAt,
      });
      expect(await store.get("missing")).toBeUndefined();
      expect((await store.list()).map((s) => s.id).sort()).toEqual([first.id, second.id].sort());
      await store.close();
    });

    it("forks the log prefix with a session_fork event and the blobs its checkpoints need", async () => {
      const store = new SessionStore({ backend });
      const parent = await store.create({ id: "parent", title: "parent", workspace: "/ws" });
      const before = blob("export const a = 1;\n");
      const later = blob("export const a = 2;\n");
      await store.append(parent.id, { type: "message", payload: { role: "user", content: "edit a.ts" } });
      await store.withLock(parent.id, async (locked) => {
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
        workspace: "/ws",
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
  });
};

/** Registers (with vitest) the checkpoint + rewind + undo area alone; `runBackendConformance` runs every area. */
export function runRewindConformance(options: BackendConformanceOptions): void {
  runAreas(options, [rewindArea]);
}
