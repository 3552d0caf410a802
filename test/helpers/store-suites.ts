import { createHash } from "node:crypto";
import { readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { claudeEvents, claudeSessionStore } from "../../src/adapters/claude-agent-sdk/index.js";
import type { StorageBackend } from "../../src/backend/index.js";
import { CheckpointStore, gc, rewind, undoRewind, verify } from "../../src/index.js";
import { closeAfter, openStore, tempDir } from "./fixture.js";

// Capture, rewind, undo, recovery, gc/verify and an adapter, defined once and run over each backend: the fs
// backend (test/session/store-suites-fs.test.ts) and PostgreSQL (test/session/postgres-store-suite.test.ts).
// Each test gets a fresh backend from `open`; the workspace is always this machine's disk.

export interface BackendUnderTest {
  name: string;
  /** A fresh, empty backend; `close` is called after the test. */
  open(): Promise<StorageBackend>;
}

const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");

export function runStoreSuites(kind: BackendUnderTest): void {
  /** A store on a fresh backend, a workspace with a.txt "one", and a session on it. */
  async function session() {
    const backend = closeAfter(await kind.open()); // closed after the store (test/helpers/fixture.ts)
    const store = openStore({ backend });
    const workspace = await tempDir(`agent-tape-${kind.name}-suite-`);
    await writeFile(join(workspace, "a.txt"), "one\n");
    const { id } = await store.create({ workspace });
    const first = await store.append(id, { type: "message", payload: { role: "user", content: "edit a, make b" } });
    const checkpoints = new CheckpointStore(store, { afterState: false });
    const edit = () =>
      checkpoints.around(id, { tool: "edit", paths: ["a.txt", "b.txt"] }, async () => {
        await writeFile(join(workspace, "a.txt"), "two\n");
        await writeFile(join(workspace, "b.txt"), "made\n");
      });
    const read = (name: string) => readFile(join(workspace, name), "utf8");
    return { backend, store, workspace, id, before: first.sequence, edit, read };
  }

  describe(`${kind.name}: capture, rewind, undo, recovery, gc/verify, an adapter`, () => {
    it("capture keeps the before-state of each touched file as a blob the checkpoint names", async () => {
      const s = await session();
      await s.edit();
      const events = await s.store.readAll(s.id);
      const checkpoint = events.find((event) => event.type === "session_checkpoint");
      expect(checkpoint).toBeDefined();
      expect(JSON.stringify(checkpoint!.payload)).toContain(sha256("one\n"));
      expect(await s.backend.listBlobs(s.id)).toContain(sha256("one\n"));
      expect(await s.backend.readBlob(s.id, sha256("one\n"))).toEqual(Buffer.from("one\n"));
    });

    it("rewind restores the files and cuts the tape; undo puts both back", async () => {
      const s = await session();
      await s.edit();
      const cutFrom = (await s.store.readAll(s.id)).map((event) => event.sequence);
      const report = await rewind(s.store, s.id, { toSequence: s.before });
      expect(await s.read("a.txt")).toBe("one\n");
      expect(await readdir(s.workspace)).not.toContain("b.txt");
      const afterRewind = (await s.store.readAll(s.id)).map((event) => event.sequence);
      expect(afterRewind).toEqual([...cutFrom.filter((n) => n <= s.before), report.markerSequence]);

      // A backend that copies log ranges keeps the cut part as bytes (fs and PostgreSQL both do).
      const archive = (await s.backend.readRecord(s.id, `rewind-archive-${report.markerSequence}`)) as {
        log?: unknown;
      };
      expect(archive.log !== undefined).toBe(s.backend.readArchivedLog !== undefined);

      await undoRewind(s.store, s.id);
      expect(await s.read("a.txt")).toBe("two\n");
      expect(await s.read("b.txt")).toBe("made\n");
      const types = (await s.store.readAll(s.id)).map((event) => event.type);
      // The cut part is put back after the rewind's marker: its checkpoint with it.
      expect(types.filter((type) => type === "session_checkpoint")).toHaveLength(1);
      expect(types.filter((type) => type === "session_rewind")).toHaveLength(2); // the rewind's marker, the undo's
    });

    it("recovery: blobs a dead holder wrote and nothing names are dropped by the next writer", async () => {
      const s = await session();
      const orphan = Buffer.from("written by a holder that died before its checkpoint\n");
      const locked = await s.backend.lock(s.id);
      await locked.writeRecord("blobs-in-flight", { pid: 1, at: new Date().toISOString() });
      await locked.writeBlob(sha256(orphan), orphan);
      await locked.release();
      await s.store.append(s.id, { type: "message", payload: { role: "user", content: "next writer" } });
      expect(await s.backend.listBlobs(s.id)).not.toContain(sha256(orphan));
      expect(await s.backend.listRecords(s.id)).not.toContain("blobs-in-flight");
    });

    it("gc deletes a blob nothing names and keeps the rest; verify then finds the session intact", async () => {
      const s = await session();
      await s.edit();
      const orphan = Buffer.from("left behind\n");
      const locked = await s.backend.lock(s.id);
      await locked.writeBlob(sha256(orphan), orphan);
      await locked.release();
      const report = await gc(s.store);
      expect(report.orphanBlobs).toBe(1);
      expect(await s.backend.listBlobs(s.id)).toEqual([sha256("one\n")]);
      const checked = await verify(s.store, s.id);
      expect(checked.problems).toEqual([]);
      expect(checked.ok).toBe(true);
    });

    it("an adapter (Claude Agent SDK session store) appends and loads its transcript through the store", async () => {
      const backend = closeAfter(await kind.open()); // closed after the store (test/helpers/fixture.ts)
      const store = openStore({ backend, events: claudeEvents });
      const claude = claudeSessionStore({ store });
      const key = { projectKey: "project", sessionId: "s1" };
      await claude.append(key, [{ type: "user", uuid: "u1" }]);
      await claude.append(key, [{ type: "assistant", uuid: "a1" }]);
      expect(await claude.load(key)).toEqual([
        { type: "user", uuid: "u1" },
        { type: "assistant", uuid: "a1" },
      ]);
    });
  });
}
