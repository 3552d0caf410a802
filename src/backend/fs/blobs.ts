import { open, readdir, readFile, rename, rm, stat, mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { fsyncDir, tempPathFor } from "./atomic.js";
import { isBlobHash, type SessionLayout } from "./layout.js";

/** Reads a blob's bytes, or undefined if there is none. */
export async function readBlobFile(layout: SessionLayout, id: string, hash: string): Promise<Buffer | undefined> {
  if (!isBlobHash(hash)) return undefined;
  try {
    return await readFile(layout.blob(id, hash));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

export async function blobExists(layout: SessionLayout, id: string, hash: string): Promise<boolean> {
  try {
    await stat(layout.blob(id, hash));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/**
 * Writes a blob durably: temp file, fsync, rename, fsync the shard folder (and the blobs folder
 * when the shard is new). An existing blob costs one stat and no write: content addressing
 * means the bytes are already there.
 */
export async function writeBlobFile(layout: SessionLayout, id: string, hash: string, bytes: Uint8Array): Promise<boolean> {
  const file = layout.blob(id, hash);
  if (await blobExists(layout, id, hash)) return false;
  const shard = dirname(file);
  const created = await mkdir(shard, { recursive: true });
  const temp = tempPathFor(file);
  const fh = await open(temp, "wx", 0o444);
  try {
    try {
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  await fsyncDir(shard);
  if (created !== undefined) await fsyncDir(dirname(shard));
  return true;
}

/**
 * Deletes a blob, and any temp file a write of it left when its process was killed mid-write
 * (recovery and pruning are the only callers, so the sweep costs nothing on the hot path).
 */
export async function deleteBlobFile(layout: SessionLayout, id: string, hash: string): Promise<void> {
  const file = layout.blob(id, hash);
  await rm(file, { force: true });
  let names: string[];
  try {
    names = await readdir(dirname(file));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  const leftover = `.tmp-${hash}-`;
  await Promise.all(names.filter((n) => n.startsWith(leftover)).map((n) => rm(`${dirname(file)}/${n}`, { force: true })));
}

/** Every blob hash of a session; temp files left by a crash are not blobs and are not listed. */
export async function listBlobFiles(layout: SessionLayout, id: string): Promise<string[]> {
  const hashes: string[] = [];
  let shards: string[];
  try {
    shards = await readdir(layout.blobs(id));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return hashes;
    throw error;
  }
  for (const shard of shards) {
    if (!/^[0-9a-f]{2}$/.test(shard)) continue;
    for (const name of await readdir(`${layout.blobs(id)}/${shard}`)) if (isBlobHash(name)) hashes.push(name);
  }
  return hashes;
}
