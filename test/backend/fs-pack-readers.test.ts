import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/index.js";
import { compactPack } from "../../src/backend/fs/blob-pack.js";
import { SessionLayout } from "../../src/backend/fs/layout.js";
import { IDLE_WAIT_MS, openSegments, packedSession } from "../helpers/pack-readers.js";

// A pack's segment kept open for reading a moment after its last read (src/backend/fs/pack-readers.ts): never a
// descriptor left behind (closed once reads stop, at the backend's close, when the session goes, when the pack is
// compacted), and never bytes that are not the blob's, whoever changes the pack meanwhile.

describe("fs backend: a pack's segment kept open between reads", () => {
  it("is one descriptor while reads go on, closed once they stop, at close and when the session goes", async () => {
    const { root, backend, id, blobs, hashes } = await packedSession(40);
    for (const [i, hash] of hashes.entries()) expect(await backend.readBlob(id, hash)).toEqual(blobs[i]);
    expect(await openSegments(root)).toHaveLength(1);
    await sleep(IDLE_WAIT_MS);
    expect(await openSegments(root)).toEqual([]);

    await backend.readBlob(id, hashes[0]!);
    expect(await openSegments(root)).toHaveLength(1);
    await backend.close();
    expect(await openSegments(root)).toEqual([]);

    const again = fsBackend({ root, packBlobsUnder: 4096 });
    expect(await again.readBlob(id, hashes[1]!)).toEqual(blobs[1]);
    expect(await again.deleteSession(id)).toBe(true);
    expect(await openSegments(root)).toEqual([]); // no deleted segment held: its space is freed now
  });

  it("a compaction here closes the segments it deletes; reads after it find the blobs where they went", async () => {
    const { root, backend, id, blobs, hashes } = await packedSession(60);
    expect(await backend.readBlob(id, hashes[59]!)).toEqual(blobs[59]);
    const locked = await backend.lock(id);
    try {
      await locked.deleteBlobs!(hashes.slice(0, 50));
      compactPack(new SessionLayout(root), id);
    } finally {
      await locked.release();
    }
    expect((await openSegments(root)).filter((name) => name.endsWith("(deleted)"))).toEqual([]);
    for (const [i, hash] of hashes.entries())
      expect(await backend.readBlob(id, hash)).toEqual(i < 50 ? undefined : blobs[i]);
    await backend.close();
  });
});
