import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { postgresBackend } from "../../src/backend/postgres/index.js";
import { CheckpointStore, gc, rewind } from "../../src/index.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { pgUrl, useSchemas } from "../helpers/postgres.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// Blobs in batches on PostgreSQL (docs/postgres.md, "Appends, cuts and readers"): a capture's before-snapshots
// are one statement, not one per blob, and a fork copies its blobs inside the database. The statements are
// counted where our code hands them to the driver: every client the pool makes has its `query` counted.

const schemas = useSchemas("blob_batches");
const pools: pg.Pool[] = [];
afterAll(async () => {
  for (const pool of pools) await pool.end();
});

/** A store on its own schema, over a pool whose every statement is recorded in `statements`. */
function countedStore() {
  const statements: string[] = [];
  const pool = new pg.Pool({ connectionString: pgUrl(), max: 4 });
  pool.on("error", () => undefined);
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const text = typeof args[0] === "string" ? args[0] : (args[0] as { text?: string }).text;
      statements.push(text ?? "");
      return query(...args);
    };
  });
  pools.push(pool);
  const backend = postgresBackend({ pool, schema: schemas.make(), lockLeaseMs: 2000 });
  return { statements, backend, store: openStore({ backend }) };
}

const writesBlobs = (text: string) => /INSERT INTO \S+\.blobs/.test(text);
const deletesBlobs = (text: string) => /DELETE FROM \S+\.blobs/.test(text);
const readsBlobBytes = (text: string) => /SELECT\s+b\.stored\b/.test(text);

describe("PostgreSQL blobs in batches", () => {
  it("gc deletes 40 blobs nothing references in one statement, not one per blob", async () => {
    const { statements, backend, store } = countedStore();
    try {
      const { id } = await store.create();
      const kept = Buffer.from("named by a checkpoint");
      const keptHash = createHash("sha256").update(kept).digest("hex");
      const orphans = Array.from({ length: 40 }, (_, i) => Buffer.from(`orphan ${i}`));
      await lockedAccess(store).withLockedSession(id, async (locked) => {
        for (const bytes of [kept, ...orphans])
          await locked.writeBlob(createHash("sha256").update(bytes).digest("hex"), bytes);
      });
      await store.append(id, {
        type: "session_checkpoint",
        payload: {
          tool: "edit",
          workspace: "/nowhere",
          files: [{ path: "f", kind: "blob", blob: keptHash, bytes: kept.length, mode: 0o644 }],
        },
      });
      statements.length = 0;
      await gc(store, { sessionIds: [id] });
      expect(statements.filter(deletesBlobs), "statements that delete blobs during gc").toHaveLength(1);
      expect(await backend.listBlobs(id)).toEqual([keptHash]);
    } finally {
      await store.close();
    }
  });

  it("a capture of 40 edited files writes their 40 before-snapshots in one statement", async () => {
    const { statements, backend, store } = countedStore();
    const workspace = await tempDir("agent-tape-pg-batch-");
    const paths = Array.from({ length: 40 }, (_, i) => `src/file-${i}.txt`);
    await mkdir(join(workspace, "src"));
    for (const [i, path] of paths.entries()) await writeFile(join(workspace, path), `before ${i}\n`);
    try {
      const { id } = await store.create({ workspace });
      const checkpoints = new CheckpointStore(store, { afterState: false });
      statements.length = 0;
      await checkpoints.around(id, { tool: "edit", paths }, async () => {
        for (const [i, path] of paths.entries()) await writeFile(join(workspace, path), `after ${i}\n`);
      });
      const blobWrites = statements.filter(writesBlobs);
      expect(blobWrites, "statements that write blobs during one capture").toHaveLength(1);
      expect(await backend.listBlobs(id)).toHaveLength(40);
    } finally {
      await store.close();
    }
  });

  it("a workspace scan of 600 files stores their blobs in two statements, a batch each, not one per file", async () => {
    const { statements, backend, store } = countedStore();
    const workspace = await tempDir("agent-tape-pg-batch-");
    await mkdir(join(workspace, "src"));
    for (let i = 0; i < 600; i++) await writeFile(join(workspace, `src/file-${i}.txt`), `file ${i}\n`);
    try {
      const { id } = await store.create({ workspace });
      const checkpoints = new CheckpointStore(store);
      statements.length = 0;
      await checkpoints.afterCommand(await checkpoints.beforeCommand(id, { tool: "bash" }));
      // 512 blobs a batch (src/checkpoint/workspace-index/scan-blobs.ts).
      expect(statements.filter(writesBlobs), "statements that write the scan's blobs").toHaveLength(2);
      expect(await backend.listBlobs(id)).toHaveLength(600);
    } finally {
      await store.close();
    }
  });

  it("a rewind of 3 edited files stores their 3 undo snapshots in one statement", async () => {
    const { statements, backend, store } = countedStore();
    const workspace = await tempDir("agent-tape-pg-batch-");
    const paths = ["a.txt", "b.txt", "c.txt"];
    for (const path of paths) await writeFile(join(workspace, path), `${path} before\n`);
    try {
      const { id } = await store.create({ workspace });
      const before = await store.append(id, { type: "message", payload: { role: "user", content: "hi" } });
      await new CheckpointStore(store, { afterState: false }).around(id, { tool: "edit", paths }, async () => {
        for (const path of paths) await writeFile(join(workspace, path), `${path} after\n`);
      });
      const blobsBefore = (await backend.listBlobs(id)).length;
      statements.length = 0;
      await rewind(store, id, { toSequence: before.sequence });
      expect(statements.filter(writesBlobs), "statements that write the rewind's undo blobs").toHaveLength(1);
      expect(await backend.listBlobs(id)).toHaveLength(blobsBefore + 3);
    } finally {
      await store.close();
    }
  });

  it("a fork copies the parent's blobs inside the database: one INSERT … SELECT, no blob bytes read", async () => {
    const { statements, backend, store } = countedStore();
    const workspace = await tempDir("agent-tape-pg-batch-");
    const paths = Array.from({ length: 10 }, (_, i) => `f${i}.txt`);
    for (const path of paths) await writeFile(join(workspace, path), `${path} before\n`);
    try {
      const { id } = await store.create({ workspace });
      await new CheckpointStore(store, { afterState: false }).around(id, { tool: "edit", paths }, async () => {
        for (const path of paths) await writeFile(join(workspace, path), `${path} after\n`);
      });
      const parentBlobs = (await backend.listBlobs(id)).sort();
      expect(parentBlobs).toHaveLength(10);
      statements.length = 0;
      const fork = await store.fork(id);
      expect(statements.filter(writesBlobs), "statements that write the fork's blobs").toHaveLength(1);
      expect(statements.filter(writesBlobs)[0]).toMatch(/INSERT INTO \S+\.blobs[\s\S]*SELECT[\s\S]*FROM \S+\.blobs/);
      expect(statements.filter(readsBlobBytes), "statements that read blob bytes out").toEqual([]);
      expect((await backend.listBlobs(fork.id)).sort()).toEqual(parentBlobs);
      for (const hash of parentBlobs)
        expect(await backend.readBlob(fork.id, hash)).toEqual(await backend.readBlob(id, hash));
    } finally {
      await store.close();
    }
  });
});
