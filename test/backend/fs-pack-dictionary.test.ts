import { createHash } from "node:crypto";
import { cp, mkdir, readdir, readFile, stat, symlink, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/index.js";
import { encodeBlobSync } from "../../src/backend/fs/blob-codec.js";
import { ENTRY_HEADER_BYTES } from "../../src/backend/fs/pack-format.js";
import { CheckpointStore, verify } from "../../src/index.js";
import { readVerifiedBlob } from "../../src/blobs/store-then-reference.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// The pack's dictionary (src/backend/fs/pack-dictionary.ts; docs/format.md, "Blob packs"): the small blobs of a
// scan are deflated against bytes drawn from them, so similar small files share what they have in common, as git's
// deltas do; every blob still reads back under its own hash, and a dictionary altered, removed or swapped for a
// link costs the blobs that need it (BLOB_CORRUPT, STORE_TAMPERED), never a wrong byte or a read outside the store.

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const here = join(import.meta.dirname, "..", "..");

/** A workspace of real source: this repository's src/ folder (some 400 TypeScript files). */
async function setup() {
  const base = await tempDir("agent-tape-dictionary-");
  const root = join(base, "root");
  const workspace = join(base, "ws");
  await mkdir(workspace, { recursive: true });
  await cp(join(here, "src"), join(workspace, "src"), { recursive: true });
  const backend = fsBackend({ root });
  const store = openStore({ backend });
  const { id } = await store.create({ workspace });
  const checkpoints = new CheckpointStore(store, { workspaceIndex: { maxFiles: 100_000 } });
  return { root, workspace, store, backend, id, checkpoints };
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) out.push(join(entry.parentPath, entry.name));
  return out;
}

const packDir = (root: string, id: string) => join(root, id, "blobs", "pack");
const dictionaries = async (root: string, id: string) =>
  (await readdir(packDir(root, id))).filter((name) => name.startsWith("dictionary-"));

describe("fs backend: the pack's dictionary", () => {
  it("a scan of real source packs in a tenth less than its blobs deflated alone, each read back exact", async () => {
    const { root, workspace, backend, id, checkpoints } = await setup();
    await checkpoints.afterCommand(await checkpoints.beforeCommand(id, { tool: "bash" }));
    const files = await Promise.all((await filesUnder(workspace)).map((path) => readFile(path)));
    expect(await dictionaries(root, id)).toHaveLength(1);
    const [name] = await dictionaries(root, id);
    const dictionary = {
      id: Number.parseInt(name!.slice(11, 19), 16),
      bytes: await readFile(join(packDir(root, id), name!)),
    };
    // The same blobs as the pack holds (stored in under 4 KiB), each deflated alone behind its entry's header.
    let alone = 0;
    let count = 0;
    for (const bytes of files)
      if (encodeBlobSync(bytes, dictionary).length < 4096) {
        alone += ENTRY_HEADER_BYTES + encodeBlobSync(bytes).length;
        count++;
      }
    const segments = (await readdir(packDir(root, id))).filter((name) => name.endsWith(".pack"));
    let packed = 0;
    for (const name of segments) packed += (await stat(join(packDir(root, id), name))).size;
    expect(count).toBeGreaterThan(150);
    // The dictionary is not a blob: usage counts the blobs, listBlobs names them.
    const blobs = await backend.listBlobs(id);
    expect(blobs.length).toBe(new Set(files.map((bytes) => sha256(bytes))).size);
    expect((await backend.usage!(id)).blobCount).toBe(blobs.length);
    expect(packed).toBeLessThan(alone * 0.9); // 0.86 on this repository's src/ when written
    for (const bytes of files) {
      const read = await backend.readBlob(id, sha256(bytes));
      expect(read && sha256(read)).toBe(sha256(bytes)); // a hash, not toEqual: deep equality of 1 MB took 4 s
    }
  });

  it("a dictionary altered or removed: the blobs that need it are BLOB_CORRUPT and verify names them", async () => {
    const { root, workspace, store, id, checkpoints } = await setup();
    // A capture of many files packs their blobs, the tape naming each (a scan's are named by its index only).
    const paths = (await filesUnder(workspace)).map((path) => path.slice(workspace.length + 1)).slice(0, 120);
    expect(paths).toContain("src/index.ts");
    await checkpoints.capture(id, { tool: "edit", paths });
    const [name] = await dictionaries(root, id);
    const path = join(packDir(root, id), name!);
    const original = await readFile(path);
    const one = await readFile(join(workspace, "src", "index.ts"));
    const reading = () => readVerifiedBlob(openStore({ backend: fsBackend({ root }) }).backend, id, sha256(one));
    await expect(reading()).resolves.toEqual(one);

    const altered = Buffer.from(original);
    altered[altered.length - 1]! ^= 0x20;
    await writeFile(path, altered);
    await expect(reading()).rejects.toMatchObject({ code: "BLOB_CORRUPT" });
    const problems = (await verify(store, id)).problems;
    expect(problems.length).toBeGreaterThan(100);
    expect(problems.every((problem) => problem.kind === "blob_corrupt")).toBe(true);

    await unlink(path);
    await expect(reading()).rejects.toMatchObject({ code: "BLOB_CORRUPT" });
    await writeFile(path, original);
    await expect(reading()).resolves.toEqual(one);
    expect((await verify(store, id)).problems).toEqual([]);
  });

  it("a dictionary swapped for a link to a file outside the store is STORE_TAMPERED, never read", async () => {
    const { root, workspace, id, checkpoints } = await setup();
    await checkpoints.afterCommand(await checkpoints.beforeCommand(id, { tool: "bash" }));
    const [name] = await dictionaries(root, id);
    const path = join(packDir(root, id), name!);
    const outside = join(root, "..", "outside-dictionary");
    await cp(path, outside);
    await unlink(path);
    await symlink(outside, path);
    const one = await readFile(join(workspace, "src", "index.ts"));
    await expect(openStore({ backend: fsBackend({ root }) }).backend.readBlob(id, sha256(one))).rejects.toMatchObject({
      code: "STORE_TAMPERED",
    });
  });

  it("a fork reads its packed blobs with the parent's dictionary copied, not linked", async () => {
    const { root, workspace, backend, id, checkpoints } = await setup();
    await checkpoints.afterCommand(await checkpoints.beforeCommand(id, { tool: "bash" }));
    const one = await readFile(join(workspace, "src", "index.ts"));
    await backend.createSession({ id: "fork", createdAt: "2025-01-01T00:00:00.000Z" }, [], {
      blobsFrom: { sessionId: id, hashes: [sha256(one)] },
    });
    const [name] = await dictionaries(root, "fork");
    expect(name).toBe((await dictionaries(root, id))[0]);
    const parent = await stat(join(packDir(root, id), name!));
    expect((await stat(join(packDir(root, "fork"), name!))).ino).not.toBe(parent.ino);
    await unlink(join(packDir(root, id), name!));
    expect(await openStore({ backend: fsBackend({ root }) }).backend.readBlob("fork", sha256(one))).toEqual(one);
  });
});
