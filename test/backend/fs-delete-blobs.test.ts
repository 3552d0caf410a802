// Deleting many blobs at once (a prune: a rewind with keepUndo 0, an archive dropped, gc): the packed ones in
// one append to the pack, the loose ones each unlinked in its shard, every folder checked as one blob's delete
// checks it (docs/ARCHITECTURE.md, "Blobs"). What is not named stays readable; a shard swapped for a link
// outside is refused before anything there is deleted.
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, realpath, rename, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/index.js";
import type { LockedSession } from "../../src/backend/types.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { codeOf } from "../helpers/outcomes.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** `small` blobs of a few bytes (packed) and `large` of 6 KB of random bytes (a file each), written. */
async function scene(small: number, large: number) {
  const base = await realpath(await tempDir("agent-tape-delete-blobs-"));
  const root = join(base, "sessions");
  const store = openStore({ backend: fsBackend({ root, packBlobsUnder: 4096 }) });
  const { id } = await store.create();
  const blobs = [
    ...Array.from({ length: small }, (_, i) => Buffer.from(`small blob ${i}`)),
    ...Array.from({ length: large }, () => randomBytes(6000)),
  ].map((bytes) => ({ hash: sha256(bytes), bytes }));
  await lockedAccess(store).withLockedSession(id, async (locked) => {
    for (const { hash, bytes } of blobs) await locked.writeBlob(hash, bytes);
  });
  return { base, root, store, id, blobs, dir: join(root, id) };
}

/** A store opened afresh reads the pack's deletions from disk, not from the deleting process's memory. */
async function expectAfterReopen(root: string, id: string, doomed: Blob[], kept: Blob[]): Promise<void> {
  const again = openStore({ backend: fsBackend({ root, packBlobsUnder: 4096 }) });
  try {
    for (const { hash } of doomed) expect(await again.backend.readBlob(id, hash)).toBeUndefined();
    for (const { hash, bytes } of kept) expect(await again.backend.readBlob(id, hash)).toEqual(bytes);
  } finally {
    await again.close();
  }
}

type Blob = { hash: string; bytes: Buffer };

function deleteMany(locked: LockedSession, hashes: string[]): Promise<void> {
  if (!locked.deleteBlobs) throw new Error("the fs backend's locked session has no deleteBlobs");
  return locked.deleteBlobs(hashes);
}

describe("deleteBlobs on the fs backend", () => {
  it("deletes the packed and loose blobs named, keeps the rest readable, ignores missing and bad names", async () => {
    const s = await scene(300, 40);
    const [doomed, kept] = [s.blobs.filter((_, i) => i % 2 === 0), s.blobs.filter((_, i) => i % 2 === 1)];
    const missing = "cd".repeat(32);
    await lockedAccess(s.store).withLockedSession(s.id, (locked) =>
      deleteMany(locked, [...doomed.map((b) => b.hash), missing, "../../etc/passwd", doomed[0]!.hash]),
    );
    for (const { hash } of doomed) {
      expect(await s.store.backend.readBlob(s.id, hash)).toBeUndefined();
      expect(existsSync(join(s.dir, "blobs", hash.slice(0, 2), hash))).toBe(false);
    }
    for (const { hash, bytes } of kept) expect(await s.store.backend.readBlob(s.id, hash)).toEqual(bytes);
    await s.store.close();
    await expectAfterReopen(s.root, s.id, doomed, kept);
  });

  it("deletes blobs a run wrote (a rewind's undo, a scan), and a pack left mostly dead is compacted", async () => {
    const s = await scene(0, 0);
    // 3 KB of random bytes: no deflate pays, each is packed as it is; 150 of them are 450 KB of pack.
    const run = Array.from({ length: 150 }, () => randomBytes(3000)).map((bytes) => ({ hash: sha256(bytes), bytes }));
    const packBytes = async () => {
      const dir = join(s.dir, "blobs", "pack");
      const sizes = await Promise.all(
        (await readdir(dir)).filter((n) => n.endsWith(".pack")).map(async (n) => (await readFile(join(dir, n))).length),
      );
      return sizes.reduce((a, b) => a + b, 0);
    };
    await lockedAccess(s.store).withLockedSession(s.id, async (locked) => {
      await locked.writeScanBlobs!(run.map(({ hash, bytes }) => [hash, bytes] as const));
      await locked.syncBlobs!(run.map(({ hash }) => hash));
    });
    expect(await packBytes()).toBeGreaterThan(400_000);
    const [doomed, kept] = [run.slice(10), run.slice(0, 10)];
    await lockedAccess(s.store).withLockedSession(s.id, (locked) =>
      deleteMany(
        locked,
        doomed.map((b) => b.hash),
      ),
    );
    expect(await packBytes()).toBeLessThan(100_000); // rewritten with its 10 live blobs only
    await s.store.close();
    await expectAfterReopen(s.root, s.id, doomed, kept);
  });

  it("a shard swapped for a link outside: STORE_TAMPERED, and nothing outside is deleted", async () => {
    const s = await scene(0, 6);
    const target = s.blobs[0]!;
    const shard = target.hash.slice(0, 2);
    const outside = join(s.base, "outside");
    await mkdir(outside);
    await writeFile(join(outside, target.hash), "not a blob of the store");
    await rename(join(s.dir, "blobs", shard), join(s.base, "shard-moved"));
    await symlink(outside, join(s.dir, "blobs", shard));
    const deleting = lockedAccess(s.store).withLockedSession(s.id, (locked) =>
      deleteMany(
        locked,
        s.blobs.map((b) => b.hash),
      ),
    );
    expect(await codeOf(deleting)).toBe("STORE_TAMPERED");
    expect(await readFile(join(outside, target.hash), "utf8")).toBe("not a blob of the store");
    await s.store.close();
  });
});
