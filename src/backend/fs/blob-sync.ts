import { lstat } from "node:fs/promises";
import { dirname } from "node:path";
import { fsyncDir, fsyncPath } from "../../core/atomic-file.js";
import { mapLimited } from "../../core/bounded-concurrency.js";
import { SYNC_FILESYSTEM_FROM, syncFilesystem } from "../../core/sync-filesystem.js";
import type { SessionLayout } from "./layout.js";
import { checkStoreFolder } from "./store-files.js";
import { packedAmong, syncPacked } from "./blob-pack.js";

// Blobs written without an fsync (blobs.ts), made durable before anything durable references them: loose files,
// pack segments, or one syncfs for many (docs/ARCHITECTURE.md, "Rewind intent", the rounds a rewind waits for).

/**
 * What a write of a blob the store holds already returns (false: nothing written). A durable write makes it durable
 * first: it may be a scan's, written without an fsync since nothing referenced it, and the caller is about to
 * reference it (test/checkpoint/scanned-blobs-durable.process.test.ts).
 */
export async function heldAlready(layout: SessionLayout, id: string, hash: string, durable: boolean): Promise<false> {
  if (durable) await syncBlobFiles(layout, id, [hash]); // a packed one's segment only if not durable already
  return false;
}

/**
 * Makes blobs written without fsync durable: each file, each shard folder once and the blobs folder, and the
 * pack's segments holding any, all waited for at once (nothing relies on their order until this returns; a third
 * of a one-file rewind's time was these waits one after another); many loose files at once by one syncfs of the
 * store's filesystem instead (core/sync-filesystem.ts). Packed blobs, however many, cost an fdatasync of their
 * segment: a syncfs would also wait for whatever else is dirty on the filesystem (another process's writes).
 */
export async function syncBlobFiles(layout: SessionLayout, id: string, all: readonly string[]): Promise<void> {
  const packed = packedAmong(layout, id, all);
  const loose = packed.size === 0 ? all : all.filter((hash) => !packed.has(hash));
  if (loose.length >= SYNC_FILESYSTEM_FROM) {
    await checkStoreFolder(id, layout.blobs(id)); // `sync` opens it by name: never through a link
    if (await syncFilesystem(layout.blobs(id))) return;
  }
  await Promise.all([syncPacked(layout, id, [...packed]), syncLooseFiles(layout, id, loose)]);
}

async function syncLooseFiles(layout: SessionLayout, id: string, hashes: readonly string[]): Promise<void> {
  if (hashes.length === 0) return;
  const shards = [...new Set(hashes.map((hash) => dirname(layout.blob(id, hash))))];
  const fsyncIfThere = async (path: string, sync: (path: string) => Promise<void>) => {
    try {
      await sync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  };
  await Promise.all([
    mapLimited(hashes, 8, (hash) => fsyncIfThere(layout.blob(id, hash), fsyncPath)),
    mapLimited(shards, 8, (shard) => fsyncIfThere(shard, fsyncDir)),
    fsyncDir(layout.blobs(id)),
  ]);
}

/**
 * {@link syncBlobFiles} for blobs that a record written right after must not outlive, in one wait for the disk
 * with the record's temp (written, not yet renamed): many loose blobs on the records' filesystem by one syncfs
 * that covers the temp too; otherwise the blobs' syncs and `syncTemp` (the temp's fsync) at the same time
 * (docs/ARCHITECTURE.md, "Rewind intent", the rounds a rewind waits for).
 */
export async function syncBlobFilesWith(
  layout: SessionLayout,
  id: string,
  all: readonly string[],
  records: string,
  syncTemp: () => Promise<void>,
): Promise<void> {
  const packed = packedAmong(layout, id, all);
  if (all.length - packed.size >= SYNC_FILESYSTEM_FROM) {
    await checkStoreFolder(id, layout.blobs(id)); // `sync` opens it by name: never through a link
    const [blobs, recordsFolder] = await Promise.all([lstat(layout.blobs(id)), lstat(records)]);
    if (blobs.dev === recordsFolder.dev && (await syncFilesystem(records))) return;
  }
  await Promise.all([syncBlobFiles(layout, id, all), syncTemp()]);
}
