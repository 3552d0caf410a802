// A snapshot of many blobs (a capture of many files, a rewind's undo snapshot) is written as a scan's blobs are:
// the small ones appended to the session's pack in one write, not each a file of its own. On this project's
// machine making a file costs 0.05-0.4 ms of kernel time (an inode), so a 1,000-file rewind spent up to a third
// of a second making its undo blobs' files (docs/ARCHITECTURE.md, "Blobs", small blobs packed). A few blobs stay files:
// the first packed blob of a session costs a capture more calls than a file.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/index.js";
import { CheckpointStore, rewind, undoRewind, verify } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { put, workspaceTree } from "../helpers/rewind-workspace.js";

const MANY = 24; // past SYNC_FILESYSTEM_FROM (16): written without an fsync each, made durable together

/** The blobs of the session that are files of their own (blobs/<2 hex>/<hash>), not in the pack. */
async function looseBlobs(root: string, id: string): Promise<string[]> {
  const blobs = join(root, id, "blobs");
  const shards = (await readdir(blobs)).filter((name) => /^[0-9a-f]{2}$/.test(name));
  return (await Promise.all(shards.map((shard) => readdir(join(blobs, shard))))).flat();
}

async function session(files: number) {
  const base = await tempDir("agent-tape-snapshot-packed-");
  const root = join(base, "store");
  const workspace = join(base, "ws");
  const paths = Array.from({ length: files }, (_, i) => `src/f${i}.ts`);
  for (const path of paths) await put(workspace, path, `export const v${path.length} = "${path}";\n`);
  const store = openStore({ backend: fsBackend({ root }) });
  const checkpoints = new CheckpointStore(store);
  const { id } = await store.create({ workspace });
  const target = await store.append(id, { type: "message", payload: { role: "user", content: "edit them" } });
  const original = await workspaceTree(workspace);
  await checkpoints.around(id, { tool: "edit", paths, callId: "c1" }, async () => {
    for (const path of paths) await put(workspace, path, `export const edited = "${path}";\n`);
  });
  return { root, workspace, store, id, target: target.sequence, original, edited: await workspaceTree(workspace) };
}

describe("a snapshot of many small blobs goes into the session's pack", () => {
  it(`a capture of ${MANY} files and the undo snapshot of its rewind: no blob is a file of its own`, async () => {
    const t = await session(MANY);
    expect(await looseBlobs(t.root, t.id)).toEqual([]); // the capture's before-snapshot
    await rewind(t.store, t.id, { toSequence: t.target });
    expect(await workspaceTree(t.workspace)).toEqual(t.original);
    expect(await looseBlobs(t.root, t.id)).toEqual([]); // the undo snapshot: the edited files' bytes
    await undoRewind(t.store, t.id);
    expect(await workspaceTree(t.workspace)).toEqual(t.edited);
    await rewind(t.store, t.id, { toSequence: t.target });
    expect(await workspaceTree(t.workspace)).toEqual(t.original);
    expect((await verify(t.store, t.id)).ok).toBe(true);
  });

  it("a capture of a few files keeps each blob a file, as before", async () => {
    const t = await session(3);
    expect(await looseBlobs(t.root, t.id)).toHaveLength(3);
    await rewind(t.store, t.id, { toSequence: t.target });
    expect(await looseBlobs(t.root, t.id)).toHaveLength(6);
    await undoRewind(t.store, t.id);
    expect(await workspaceTree(t.workspace)).toEqual(t.edited);
  });
});
