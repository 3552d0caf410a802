import { createHash, randomBytes } from "node:crypto";
import { appendFile, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/index.js";
import { CheckpointStore, rewind, verify } from "../../src/index.js";
import { readVerifiedBlob } from "../../src/blobs/store-then-reference.js";
import { encodeEntry, BLOB } from "../../src/backend/fs/pack-format.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// The pack (src/backend/fs/blob-pack.ts; docs/format.md, "Blob packs"): small blobs appended together, read by
// offset, their damage seen as a loose blob's is, a crash's torn tail cut, deletions compacted.

const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");
const segmentOf = (root: string, id: string, n = 1) =>
  join(root, id, "blobs", "pack", `${String(n).padStart(8, "0")}.pack`);

async function setup() {
  const base = await tempDir("agent-tape-pack-");
  const root = join(base, "root");
  const workspace = join(base, "ws");
  await mkdir(workspace, { recursive: true });
  const backend = fsBackend({ root, packBlobsUnder: 4096 });
  const store = openStore({ backend });
  const { id } = await store.create({ workspace });
  return { root, workspace, store, backend, id, checkpoints: new CheckpointStore(store, { afterState: false }) };
}

async function writeBlobs(backend: ReturnType<typeof fsBackend>, id: string, blobs: readonly Buffer[]) {
  const locked = await backend.lock(id);
  try {
    for (const bytes of blobs) await locked.writeBlob(sha256(bytes), bytes);
  } finally {
    await locked.release();
  }
  return blobs.map((bytes) => sha256(bytes));
}

describe("fs backend: the blob pack", () => {
  it("a capture of 400 small files takes one segment: the disk follows the bytes, not the file count", async () => {
    const { root, workspace, store, id, checkpoints } = await setup();
    const paths: string[] = [];
    for (let i = 0; i < 400; i++) {
      paths.push(`f${i}.ts`);
      await writeFile(
        join(workspace, `f${i}.ts`),
        `export const value${i} = ${i};\n// ${randomBytes(300).toString("hex")}\n`,
      );
    }
    await checkpoints.capture(id, { tool: "edit", paths });
    expect(await readdir(join(root, id, "blobs"))).toEqual(["pack"]);
    // One segment, and the dictionary its entries were deflated against (drawn from them: pack-dictionary.ts).
    const inPack = await readdir(join(root, id, "blobs", "pack"));
    expect(inPack.filter((name) => name.endsWith(".pack"))).toEqual(["00000001.pack"]);
    expect(inPack.filter((name) => name.startsWith("dictionary-"))).toHaveLength(1);
    const info = await stat(segmentOf(root, id));
    // Each file as its own blob took a 4 KiB block: 1.6 MB; packed, about its ~700 stored bytes each.
    expect(info.blocks * 512).toBeLessThan(400 * 1024);
    expect((await store.backend.listBlobs(id)).length).toBe(400);
    expect((await verify(store, id)).problems).toEqual([]);
  });

  it("blobs written together are a run: at least 15 bytes a blob less than one at a time, each read back", async () => {
    const blobs = Array.from({ length: 300 }, (_, i) =>
      Buffer.from(`export const value${i} = ${i};\n// ${"step ".repeat(20 + (i % 40))}${i}\n`),
    );
    const hashes = blobs.map((bytes) => sha256(bytes));
    const one = await setup();
    await writeBlobs(one.backend, one.id, blobs);
    const together = await setup();
    const locked = await together.backend.lock(together.id);
    try {
      expect((await locked.writeScanBlobs!(blobs.map((bytes, i) => [hashes[i]!, bytes]))).sort()).toEqual(
        [...hashes].sort(),
      );
    } finally {
      await locked.release();
    }
    const alone = (await stat(segmentOf(one.root, one.id))).size;
    const run = (await stat(segmentOf(together.root, together.id))).size;
    // One at a time, a blob's entry takes a 52-byte header and its body an 11 to 15-byte loose header; in a run, a
    // 43-byte row holds both (docs/format.md, "Blob packs").
    expect(alone - run).toBeGreaterThanOrEqual(15 * blobs.length); // 20 measured: 0 before runs
    const reader = fsBackend({ root: together.root, packBlobsUnder: 4096 });
    for (const [i, hash] of hashes.entries()) expect(await reader.readBlob(together.id, hash)).toEqual(blobs[i]);
    expect((await reader.listBlobs(together.id)).sort()).toEqual([...hashes].sort());
  });

  it("bytes altered in a packed blob: BLOB_CORRUPT, verify names it, a rewind skips it, the rest restore", async () => {
    const { root, workspace, store, id, checkpoints } = await setup();
    await writeFile(join(workspace, "a.txt"), "alpha\n");
    await writeFile(join(workspace, "b.txt"), "beta\n");
    await checkpoints.capture(id, { tool: "edit", paths: ["a.txt", "b.txt"] });
    await writeFile(join(workspace, "a.txt"), "edited a\n");
    await writeFile(join(workspace, "b.txt"), "edited b\n");
    const pack = await readFile(segmentOf(root, id));
    const at = pack.indexOf(Buffer.from("alpha\n"));
    pack[at] = "A".charCodeAt(0);
    await writeFile(segmentOf(root, id), pack);
    expect((await verify(store, id)).problems).toMatchObject([{ kind: "blob_corrupt", hash: sha256("alpha\n") }]);
    const report = await rewind(store, id, { toSequence: 0 });
    expect(report.changes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: "a.txt", action: "skip", reason: "blob_corrupt" }),
        expect.objectContaining({ path: "b.txt", action: "restore" }),
      ]),
    );
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("edited a\n");
    expect(await readFile(join(workspace, "b.txt"), "utf8")).toBe("beta\n");
  });

  it("a header altered mid-pack: the blobs from it on missing, nothing cut, the next write a new segment", async () => {
    const { root, backend, id } = await setup();
    const blobs = [0, 1, 2].map((i) => Buffer.from(`blob ${i} ${randomBytes(100).toString("hex")}`));
    const [first, second, third] = await writeBlobs(backend, id, blobs);
    const pack = await readFile(segmentOf(root, id));
    const secondAt = pack.indexOf(Buffer.from(second!, "hex")) - 12;
    pack[secondAt + 9]! ^= 0xff; // its length
    await writeFile(segmentOf(root, id), pack);
    const reader = fsBackend({ root, packBlobsUnder: 4096 });
    expect(await reader.readBlob(id, first!)).toEqual(blobs[0]);
    expect(await reader.readBlob(id, second!)).toBeUndefined();
    expect(await reader.readBlob(id, third!)).toBeUndefined();
    const more = Buffer.from("after the damage");
    await writeBlobs(backend, id, [more]);
    expect((await readFile(segmentOf(root, id))).equals(pack)).toBe(true);
    expect(await readdir(join(root, id, "blobs", "pack"))).toEqual(["00000001.pack", "00000002.pack"]);
    expect(await fsBackend({ root, packBlobsUnder: 4096 }).readBlob(id, sha256(more))).toEqual(more);
  });

  it("a torn tail (an entry cut short, or zeros) is not read; the next writer cuts it before appending", async () => {
    const torn = Buffer.from("torn away before its end\n");
    for (const tail of [encodeEntry(BLOB, sha256(torn), torn).subarray(0, 60), Buffer.alloc(300)]) {
      const { root, backend, id } = await setup();
      const blobs = [Buffer.from("one\n"), Buffer.from("two\n")];
      const hashes = await writeBlobs(backend, id, blobs);
      const whole = (await stat(segmentOf(root, id))).size;
      await appendFile(segmentOf(root, id), tail);
      const reader = fsBackend({ root, packBlobsUnder: 4096 });
      expect((await reader.listBlobs(id)).sort()).toEqual([...hashes].sort());
      expect(await reader.readBlob(id, sha256(torn))).toBeUndefined();
      const next = Buffer.from(`next ${tail.length}\n`);
      await writeBlobs(backend, id, [next]);
      expect((await stat(segmentOf(root, id))).size).toBe(whole + 52 + next.length);
      expect(await fsBackend({ root, packBlobsUnder: 4096 }).readBlob(id, sha256(next))).toEqual(next);
      for (const [i, hash] of hashes.entries()) expect(await backend.readBlob(id, hash)).toEqual(blobs[i]);
    }
  });

  it("deleting most blobs compacts the pack into one new segment holding the rest; deleted ones are gone", async () => {
    const { root, backend, id } = await setup();
    const blobs = Array.from({ length: 300 }, () => randomBytes(2000)); // incompressible: 2 KB stored each
    const hashes = await writeBlobs(backend, id, blobs);
    const before = (await stat(segmentOf(root, id))).size;
    const locked = await backend.lock(id);
    for (const hash of hashes.slice(0, 250)) await locked.deleteBlob(hash);
    await locked.release();
    const segments = await readdir(join(root, id, "blobs", "pack"));
    expect(segments).toHaveLength(1);
    expect(segments[0]).not.toBe("00000001.pack");
    const after = (await stat(join(root, id, "blobs", "pack", segments[0]!))).size;
    // Compacted once half was dead (about 150 live copied); the later deletions are 52-byte entries after them.
    expect(after).toBeLessThan(before * 0.55);
    const reader = fsBackend({ root, packBlobsUnder: 4096 });
    expect((await reader.listBlobs(id)).sort()).toEqual(hashes.slice(250).sort());
    for (const [i, hash] of hashes.entries()) {
      if (i < 250) expect(await reader.readBlob(id, hash)).toBeUndefined();
      else expect(await reader.readBlob(id, hash)).toEqual(blobs[i]);
    }
  });

  it("loose blob files of an older store and packed ones read side by side; neither is written twice", async () => {
    const { root, id } = await setup();
    const loose = fsBackend({ root, packBlobsUnder: 0 });
    const old = Buffer.from("written before packs\n");
    await writeBlobs(loose, id, [old]);
    const packing = fsBackend({ root, packBlobsUnder: 4096 });
    const fresh = Buffer.from("written into the pack\n");
    await writeBlobs(packing, id, [old, fresh]);
    expect(await readFile(join(root, id, "blobs", sha256(old).slice(0, 2), sha256(old)))).toEqual(old);
    expect((await readFile(segmentOf(root, id))).length).toBe(52 + fresh.length);
    expect((await packing.listBlobs(id)).sort()).toEqual([sha256(old), sha256(fresh)].sort());
    expect(await readVerifiedBlob(packing, id, sha256(old))).toEqual(old);
    expect(await readVerifiedBlob(packing, id, sha256(fresh))).toEqual(fresh);
    const usage = await packing.usage!(id);
    expect(usage.blobCount).toBe(2);
  });

  it("a fork copies the packed blobs it needs into a pack of its own, never a link to the parent's", async () => {
    const { root, backend, id } = await setup();
    const blobs = [Buffer.from("kept by the fork\n"), Buffer.from("not named\n")];
    const [kept] = await writeBlobs(backend, id, blobs);
    await backend.createSession({ id: "fork", createdAt: "2025-01-01T00:00:00.000Z" }, [], {
      blobsFrom: { sessionId: id, hashes: [kept!] },
    });
    expect(await backend.listBlobs("fork")).toEqual([kept]);
    const parent = await stat(segmentOf(root, id));
    const child = await stat(segmentOf(root, "fork"));
    expect(child.ino).not.toBe(parent.ino);
    await writeBlobs(backend, id, [Buffer.from("later in the parent\n")]);
    expect(await backend.listBlobs("fork")).toEqual([kept]);
    expect(await backend.readBlob("fork", kept!)).toEqual(blobs[0]);
  });
});
