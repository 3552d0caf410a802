import { closeSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { runChild } from "../helpers/children.js";
import { IDLE_WAIT_MS, openSegmentDescriptors, openSegments, packedSession } from "../helpers/pack-readers.js";

// A pack's segment kept open between reads (src/backend/fs/pack-readers.ts) while another process deletes blobs
// and compacts the pack (a real child: test/children/pack-deleter.ts), or closes its descriptor from outside.

describe("fs backend: a pack's segment kept open, the pack compacted by another process", () => {
  it("each read is the blob's bytes or nothing meanwhile; once reads stop, the deleted ones are gone", async () => {
    const { root, backend, id, blobs, hashes } = await packedSession(60);
    const wrong: string[] = [];
    let reads = 0;
    let reading = true;
    // Reads one after another every few milliseconds, so the segment stays open across the other process's work.
    const loop = (async () => {
      while (reading) {
        const i = reads++ % hashes.length;
        const bytes = await backend.readBlob(id, hashes[i]!);
        if (bytes !== undefined && !bytes.equals(blobs[i]!)) wrong.push(hashes[i]!);
        if (bytes === undefined && i >= 50) wrong.push(`${hashes[i]} missing`);
        await sleep(2);
      }
    })();
    const child = await runChild("pack-deleter.ts", [root, id, ...hashes.slice(0, 50)]);
    expect(child.stdout, child.stderr).toBe("compacted\n");
    const after = reads;
    while (reads < after + 2 * hashes.length) await sleep(5); // every blob read twice more after the compaction
    reading = false;
    await loop;
    expect(wrong).toEqual([]);
    await sleep(IDLE_WAIT_MS);
    expect(await openSegments(root)).toEqual([]);
    for (const [i, hash] of hashes.entries())
      expect(await backend.readBlob(id, hash)).toEqual(i < 50 ? undefined : blobs[i]);
    await backend.close();
  });
});

describe("fs backend: a kept segment's descriptor closed from outside", () => {
  // Here, not among the unit tests: those run as threads of one process, sharing its descriptors, so a number this
  // test closes can be reused at once by another file's open, which the retry would then close (CI saw that file
  // fail with EBADF). The process project's workers run one file at a time, each in a process of its own.
  it("a kept descriptor that fails to read is opened again: the read still gives the blob", async () => {
    const { root, backend, id, blobs, hashes } = await packedSession(3);
    expect(await backend.readBlob(id, hashes[0]!)).toEqual(blobs[0]);
    const kept = await openSegmentDescriptors(root);
    expect(kept).toHaveLength(1);
    closeSync(kept[0]!); // closed behind its back: the next read through it fails (EBADF)
    expect(await backend.readBlob(id, hashes[1]!)).toEqual(blobs[1]);
    expect(await openSegments(root)).toHaveLength(1);
    await backend.close();
  });
});
