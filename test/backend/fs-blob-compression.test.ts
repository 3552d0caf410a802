import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { deflateRawSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { CheckpointStore, isAgentTapeError, rewind, verify } from "../../src/index.js";
import { fsBackend } from "../../src/backend/index.js";
import { readVerifiedBlob } from "../../src/blobs/store-then-reference.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");
const MAGIC = Buffer.from([0x00, 0x61, 0x74, 0x7a]);

/** Source-like text: what a coding agent's blobs mostly are. */
function sourceText(lines: number): string {
  let text = "";
  for (let i = 0; i < lines; i++)
    text += `export function step${i}(input: number[]): number {\n  return input[${i % 7}] * ${i};\n}\n`;
  return text;
}

async function setup(options: { compressBlobs?: boolean; root?: string; workspace?: string } = {}) {
  const base = await tempDir("agent-tape-compress-");
  const root = options.root ?? join(base, "root");
  const workspace = options.workspace ?? join(base, "workspace");
  await mkdir(workspace, { recursive: true });
  const backend = fsBackend({
    root,
    packBlobsUnder: 0, // every blob its own file: the loose format is what is tested here (packs: fs-blob-pack)
    ...(options.compressBlobs !== undefined && { compressBlobs: options.compressBlobs }),
  });
  const store = openStore({ backend });
  return { root, workspace, store, backend, checkpoints: new CheckpointStore(store, { afterState: false }) };
}

const blobFile = (root: string, id: string, hash: string) => join(root, id, "blobs", hash.slice(0, 2), hash);

async function writeBlob(backend: ReturnType<typeof fsBackend>, id: string, bytes: Buffer): Promise<string> {
  const hash = sha256(bytes);
  const locked = await backend.lock(id);
  try {
    await locked.writeBlob(hash, bytes);
  } finally {
    await locked.release();
  }
  return hash;
}

describe("fs backend: compressed blobs", () => {
  it("source text is stored compressed behind the marker, named and read back by its original sha256", async () => {
    const { root, store, backend } = await setup();
    const { id } = await store.create();
    const text = Buffer.from(sourceText(200));
    const hash = await writeBlob(backend, id, text);
    const onDisk = await readFile(blobFile(root, id, hash));
    expect(onDisk.subarray(0, 4)).toEqual(MAGIC);
    expect(onDisk.length).toBeLessThan(text.length / 4);
    expect(await readVerifiedBlob(backend, id, hash)).toEqual(text);
  });

  it("incompressible and small blobs are stored raw; raw bytes that look like the marker round-trip", async () => {
    const { root, store, backend } = await setup();
    const { id } = await store.create();
    const random = randomBytes(5000);
    const small = Buffer.from("one\n");
    const lookalike = Buffer.concat([MAGIC, Buffer.from([1, 0, 0, 0, 0, 0, 9]), randomBytes(300)]);
    for (const bytes of [random, small]) {
      const hash = await writeBlob(backend, id, bytes);
      expect(await readFile(blobFile(root, id, hash))).toEqual(bytes);
      expect(await readVerifiedBlob(backend, id, hash)).toEqual(bytes);
    }
    const hash = await writeBlob(backend, id, lookalike);
    expect((await readFile(blobFile(root, id, hash))).length).toBe(lookalike.length + 11);
    expect(await readVerifiedBlob(backend, id, hash)).toEqual(lookalike);
  });

  it("a store written without compression still reads, verifies, rewinds; new blobs beside it compress", async () => {
    const old = await setup({ compressBlobs: false });
    const { id } = await old.store.create({ workspace: old.workspace });
    const v1 = sourceText(100);
    await writeFile(join(old.workspace, "a.ts"), v1);
    await old.checkpoints.capture(id, { tool: "edit", paths: ["a.ts"] });
    await writeFile(join(old.workspace, "a.ts"), sourceText(120));
    // An old raw blob that happens to start with the marker, planted as the old code wrote it.
    const odd = Buffer.concat([MAGIC, Buffer.from([1, 0, 0, 0, 0, 0, 5]), Buffer.from("not deflate at all")]);
    await writeBlob(old.backend, id, odd);
    expect((await readFile(blobFile(old.root, id, sha256(v1)))).toString()).toBe(v1); // raw on disk
    await old.store.close();

    const now = await setup({ root: old.root, workspace: old.workspace });
    expect(await readVerifiedBlob(now.backend, id, sha256(odd))).toEqual(odd);
    await now.checkpoints.capture(id, { tool: "edit", paths: ["a.ts"] });
    expect((await readFile(blobFile(old.root, id, sha256(sourceText(120))))).subarray(0, 4)).toEqual(MAGIC);
    await writeFile(join(old.workspace, "a.ts"), "later");
    expect((await verify(now.store, id)).problems).toEqual([]);
    await rewind(now.store, id, { toSequence: 0 });
    expect(await readFile(join(old.workspace, "a.ts"), "utf8")).toBe(v1);
  });

  it("a compressed blob whose file was altered is BLOB_CORRUPT: verify names it and a rewind skips it", async () => {
    const { root, store, checkpoints, workspace, backend } = await setup();
    const { id } = await store.create({ workspace });
    const v1 = sourceText(100);
    await writeFile(join(workspace, "a.ts"), v1);
    await checkpoints.capture(id, { tool: "edit", paths: ["a.ts"] });
    await writeFile(join(workspace, "a.ts"), "edited");
    const file = blobFile(root, id, sha256(v1));
    const onDisk = await readFile(file);
    await chmod(file, 0o644);
    // Other content, well compressed behind the same header: it decodes, but not to the named bytes.
    const other = Buffer.from(sourceText(100).replace("step1(", "evil1("));
    await writeFile(file, Buffer.concat([onDisk.subarray(0, 11), deflateRawSync(other)]));
    const error = await readVerifiedBlob(backend, id, sha256(v1)).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "BLOB_CORRUPT")).toBe(true);
    // Garbage behind the header: it does not decode, and the raw bytes do not hash to the name either.
    await writeFile(file, Buffer.concat([onDisk.subarray(0, 11), randomBytes(200)]));
    expect((await verify(store, id)).problems).toMatchObject([{ kind: "blob_corrupt", hash: sha256(v1) }]);
    const report = await rewind(store, id, { toSequence: 0 });
    expect(report.changes).toMatchObject([{ path: "a.ts", action: "skip", reason: "blob_corrupt" }]);
    expect(await readFile(join(workspace, "a.ts"), "utf8")).toBe("edited");
  });
});
