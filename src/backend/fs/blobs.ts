import { closeSync, fsync, lstatSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, writeSync } from "node:fs";
import { open, readdir, rename, rm, lstat, mkdir, unlink, type FileHandle } from "node:fs/promises";
import { Readable } from "node:stream";
import { createInflateRaw } from "node:zlib";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { createHash, randomBytes } from "node:crypto";
import { fsyncDir } from "../../core/atomic-file.js";
import { forEachLimited, mapLimited } from "../../core/bounded-concurrency.js";
import { yieldIfLong } from "../../core/time-slices.js";
import { isBlobHash } from "../names.js";
import type { SessionLayout } from "./layout.js";
import {
  checkStoreFolder,
  checkStoreFolderSync,
  openStoreFile,
  READ,
  readStoreFile,
  readStoreFileNow,
} from "./store-files.js";
import {
  blobHeader,
  decodeBlob,
  DEFLATE_RAW,
  encodeBlob,
  encodeBlobsOffThread,
  encodeBlobSync,
  HEADER_BYTES,
} from "./blob-codec.js";
import type { BlobDigest } from "../types.js";
import { deletePacked, isPacked, listPacked, packedAmong, packedBytes, readPacked } from "./blob-pack.js";
import { appendPacked, holdsWhole, packIndex, writePackedMany } from "./blob-pack.js";
import { dictionaryForBatch, dictionaryReader, packDictionary } from "./pack-dictionary.js";
import { heldAlready } from "./blob-sync.js";

/** blobs/ and the blob's shard must be real folders of the store, not links out of it (both looked at at once). */
async function checkBlobFolders(layout: SessionLayout, id: string, hash: string): Promise<void> {
  await Promise.all([checkStoreFolder(id, layout.blobs(id)), checkStoreFolder(id, dirname(layout.blob(id, hash)))]);
}

/** Reads a blob's original bytes (decompressed), or undefined if there is none. */
export async function readBlobFile(
  layout: SessionLayout,
  id: string,
  hash: string,
  maxBytes?: number,
): Promise<Buffer | undefined> {
  const file = layout.blob(id, hash); // checks the id first, as every path of the session does
  if (!isBlobHash(hash)) return undefined;
  const packed = readPacked(layout, id, hash, false);
  if (packed) return decodeBlob(packed, maxBytes, dictionaryReader(layout, id));
  try {
    // A blob of maxBytes is at most that plus a header as stored (compressed only when it saved a tenth):
    // reading one more byte than that is enough to see a longer one, and all a planted giant costs.
    const prefix = maxBytes === undefined ? Number.POSITIVE_INFINITY : maxBytes + HEADER_BYTES + 1;
    // A small one with synchronous calls (a rewind reads one per file it restores), a large one through the pool.
    checkStoreFolderSync(id, layout.blobs(id));
    checkStoreFolderSync(id, dirname(file));
    const small = readStoreFileNow(id, file, prefix, SYNC_READ_MAX);
    return await decodeBlob(small ?? (await readStoreFile(id, file, prefix)), maxBytes);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const later = readPacked(layout, id, hash, true); // not loose: packed, maybe since this process last looked
  return later ? decodeBlob(later, maxBytes, dictionaryReader(layout, id)) : undefined;
}

/** Stored bytes up to which a blob file is read with synchronous calls (readStoreFileNow). */
const SYNC_READ_MAX = 64 * 1024;

/** Bytes a blob file is read by, and inflated into, when hashed as a stream. */
const DIGEST_CHUNK = 64 * 1024;

/**
 * The sha256 and length of a blob's original bytes, read and inflated a chunk at a time (memory: about two
 * chunks, whatever the file holds or claims), or undefined if there is none. Hashing stops once more than
 * `maxBytes` came out: the length then says "longer than recorded". A file that starts with the marker and
 * does not inflate to its claim is hashed raw, as `decodeBlob` returns it.
 */
export async function digestBlobFile(
  layout: SessionLayout,
  id: string,
  hash: string,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<BlobDigest | undefined> {
  const file = layout.blob(id, hash); // checks the id first, as every path of the session does
  if (!isBlobHash(hash)) return undefined;
  const packed =
    readPacked(layout, id, hash, false) ??
    (blobExistsLoose(layout, id, hash) ? undefined : readPacked(layout, id, hash, true));
  if (packed) {
    // A packed blob is under a few KiB as stored: decoded whole, cut past maxBytes as decodeBlob cuts it.
    const bytes = await decodeBlob(
      packed,
      Number.isFinite(maxBytes) ? maxBytes : undefined,
      dictionaryReader(layout, id),
    );
    return { sha256: createHash("sha256").update(bytes).digest("hex"), bytes: bytes.length };
  }
  let handle;
  try {
    await checkBlobFolders(layout, id, hash);
    handle = await openStoreFile(id, file, READ);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const head = Buffer.alloc(HEADER_BYTES);
    const { bytesRead } = await handle.read(head, 0, HEADER_BYTES, 0);
    const header = blobHeader(head.subarray(0, bytesRead));
    if (header && header.length <= maxBytes) {
      const from = header.method === DEFLATE_RAW ? await inflatedDigest(handle, header.length) : undefined;
      if (from) return from;
      if (header.method !== DEFLATE_RAW) {
        const stored = await chunkDigest(handle, HEADER_BYTES, maxBytes);
        if (stored.bytes === header.length) return stored;
      }
    }
    return await chunkDigest(handle, 0, maxBytes);
  } finally {
    await handle.close();
  }
}

/** Hashes the file's bytes from `start`, a chunk at a time, stopping past `maxBytes`. */
async function chunkDigest(handle: FileHandle, start: number, maxBytes: number): Promise<BlobDigest> {
  const hasher = createHash("sha256");
  const chunk = Buffer.allocUnsafe(DIGEST_CHUNK);
  let bytes = 0;
  while (bytes <= maxBytes) {
    const want = Math.min(chunk.length, maxBytes + 1 - bytes);
    const { bytesRead } = await handle.read(chunk, 0, want, start + bytes);
    if (bytesRead === 0) break;
    hasher.update(chunk.subarray(0, bytesRead));
    bytes += bytesRead;
  }
  return { sha256: hasher.digest("hex"), bytes };
}

async function* chunksOf(handle: FileHandle, start: number): AsyncGenerator<Buffer> {
  for (let at = start; ; ) {
    const chunk = Buffer.allocUnsafe(DIGEST_CHUNK);
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, at);
    if (bytesRead === 0) return;
    at += bytesRead;
    yield chunk.subarray(0, bytesRead);
  }
}

/** The digest of what the body after the header inflates to, or undefined when it is not `length` bytes of it. */
async function inflatedDigest(handle: FileHandle, length: number): Promise<BlobDigest | undefined> {
  const hasher = createHash("sha256");
  const inflate = createInflateRaw({ chunkSize: DIGEST_CHUNK });
  let bytes = 0;
  // Read by hand, not handle.createReadStream: destroying that stream early closes the handle the caller owns.
  const source = Readable.from(chunksOf(handle, HEADER_BYTES), { objectMode: false });
  try {
    for await (const out of source.pipe(inflate) as AsyncIterable<Buffer>) {
      bytes += out.length;
      if (bytes > length) return undefined; // more than it claims: not ours (hashed raw instead)
      hasher.update(out);
    }
  } catch {
    return undefined; // does not inflate: an old raw blob that happens to start with the marker, or damage
  } finally {
    source.unpipe(inflate);
    source.destroy();
    inflate.destroy();
  }
  return bytes === length ? { sha256: hasher.digest("hex"), bytes } : undefined;
}

/** The size of a blob's file as it lies on disk (compressed or raw), or undefined if there is none. */
export async function storedBlobFileBytes(
  layout: SessionLayout,
  id: string,
  hash: string,
): Promise<number | undefined> {
  const file = layout.blob(id, hash); // checks the id first, as every path of the session does
  if (!isBlobHash(hash)) return undefined;
  const packed = packedBytes(layout, id, hash);
  if (packed !== undefined) return packed;
  try {
    await checkBlobFolders(layout, id, hash);
    const info = await lstat(file);
    return info.isFile() ? info.size : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** A loose blob file of the hash is there (one synchronous lstat). */
function blobExistsLoose(layout: SessionLayout, id: string, hash: string): boolean {
  return lstatSync(layout.blob(id, hash), { throwIfNoEntry: false }) !== undefined;
}

/**
 * The blob is there, packed or a file. One synchronous lstat rather than a hop through the thread pool: a rewind
 * asks it of each blob it may have orphaned (docs/ARCHITECTURE.md, "Batched file work").
 */
export async function blobExists(layout: SessionLayout, id: string, hash: string): Promise<boolean> {
  return isPacked(layout, id, hash) || blobExistsLoose(layout, id, hash);
}

/**
 * Writes a blob durably: a temp file in `blobs/.incoming/`, fsync, rename into its shard, fsync
 * the shard (and the blobs folder when the shard is new). An existing blob costs one stat and no
 * write: content addressing means the bytes are already there. Folders are made only when a
 * write finds them missing, so the common case pays no mkdir. Not `durable`, the same without
 * the fsyncs: a process crash still leaves the blob whole or absent (the rename), a power loss
 * may not, until {@link syncBlobFiles}. With the layout's `compressBlobs`, the file holds the bytes
 * compressed when that pays (blob-codec.ts); the name is always the sha256 of the original bytes.
 */
export async function writeBlobFile(
  layout: SessionLayout,
  id: string,
  hash: string,
  bytes: Uint8Array,
  durable = true,
): Promise<boolean> {
  let stored: Uint8Array | undefined;
  if (layout.packBlobsUnder > 0 && bytes.length <= SYNC_WRITE_MAX) {
    // Small once stored: into the pack (blob-pack.ts), unless the pack or a loose file (an older store) has it. One
    // look at the pack answers every question below, synchronously up to the write.
    const pack = packIndex(layout, id);
    if (holdsWhole(pack, hash) || blobExistsLoose(layout, id, hash)) return heldAlready(layout, id, hash, durable);
    const dictionary = layout.compressBlobs ? packDictionary(layout, id, false) : undefined;
    const packable = layout.compressBlobs ? encodeBlobSync(bytes, dictionary) : bytes;
    if (packable.length < layout.packBlobsUnder) return appendPacked(layout, id, pack, hash, packable, durable);
    if (dictionary === undefined) stored = packable; // a loose file is read without the pack's dictionary
  }
  if (bytes.length <= SYNC_WRITE_MAX) return writeSmallBlobFile(layout, id, hash, bytes, durable, stored);
  const file = layout.blob(id, hash);
  const incoming = layout.incomingBlobs(id);
  // The look for the blob and the checks of its folders are independent: one round trip through the
  // thread pool for all four instead of one each. An existing blob costs nothing more (nothing
  // is written, and reads check for themselves), whatever the checks found.
  const [exists, checked] = await Promise.all([
    blobExists(layout, id, hash),
    Promise.all([
      checkStoreFolder(id, layout.blobs(id)),
      checkStoreFolder(id, dirname(file)),
      checkStoreFolder(id, incoming),
    ]).then(
      ([, shard]) => ({ shard }),
      (error: unknown) => ({ error }),
    ),
  ]);
  if (exists) return heldAlready(layout, id, hash, durable);
  if ("error" in checked) throw checked.error;
  const temp = join(incoming, `${hash}-${randomBytes(4).toString("hex")}`);
  stored ??= layout.compressBlobs ? await encodeBlob(bytes) : bytes;
  let newShard = false;
  if (!checked.shard) {
    // A new shard: made before the rename rather than after it fails (one call fewer).
    await mkdir(dirname(file), { recursive: true });
    newShard = true;
  }
  const fh = await retryAfterMkdir(incoming, () => open(temp, "wx", 0o444));
  try {
    try {
      await fh.writeFile(stored);
      if (durable) await fh.sync();
    } finally {
      await fh.close();
    }
    await retryAfterMkdir(
      dirname(file),
      () => rename(temp, file),
      () => (newShard = true),
    );
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  if (!durable) return true;
  // The blob's name in its shard and a new shard's name in blobs/: independent, so waited for together.
  await Promise.all([fsyncDir(dirname(file)), newShard ? fsyncDir(layout.blobs(id)) : undefined]);
  return true;
}

/**
 * {@link writeBlobFile} for many blobs, all or nothing (what it wrote is deleted when it throws): returns the
 * hashes it wrote. The small ones (stored in fewer than the layout's `packBlobsUnder` bytes) go into the pack in
 * one append (writePackedMany): a workspace scan's blobs, most never read, cost a few bytes of a segment each
 * instead of a file and a block (docs/ARCHITECTURE.md, "Blobs"). `callerWaits`: see encodeBlobsOffThread.
 */
export async function writeBlobFiles(
  layout: SessionLayout,
  id: string,
  blobs: Iterable<readonly [hash: string, bytes: Uint8Array]>,
  durable: boolean,
  options: { callerWaits?: boolean } = {},
): Promise<string[]> {
  const packUnder = layout.packBlobsUnder;
  const written: string[] = [];
  const toPack: [string, Uint8Array][] = [];
  // A loose file of a hash can only be in its shard: where the shard is missing (most, in a new session) the
  // look costs nothing.
  const shards = packUnder > 0 ? looseShards(layout, id) : new Set<string>();
  const all = [...blobs];
  // Those the pack holds already (a rewind's undo copy of files a scan stored) are not deflated only for the
  // append to find them there: 284 of them were most of a session rewind's undo copy (docs/ARCHITECTURE.md,
  // "Batched file work").
  const packed = packedAmong(layout, id, packUnder > 0 ? all.map(([hash]) => hash) : []);
  const small: [string, Uint8Array][] = [];
  try {
    for (const [hash, bytes] of all) {
      // An older store's loose file (or a large one) is left as it is.
      if (packUnder > 0 && bytes.length <= SYNC_WRITE_MAX) {
        if (packed.has(hash)) continue;
        if (!shards.has(hash.slice(0, 2)) || !blobExistsLoose(layout, id, hash)) small.push([hash, bytes]);
        // A look is a synchronous lstat where the shard exists: a rewind's 1,000 undo blobs in a session whose
        // captures made their shards held the event loop 86 ms without a turn (docs/ARCHITECTURE.md, "Batched
        // file work", time slices). The pack append re-checks what it holds just before it writes.
        await yieldIfLong();
      } else if (await writeBlobFile(layout, id, hash, bytes, durable)) written.push(hash);
    }
    const raw = small.map(([, bytes]) => bytes);
    const dictionary = layout.compressBlobs && raw.length > 0 ? await dictionaryForBatch(layout, id, raw) : undefined;
    const stored = !layout.compressBlobs
      ? raw
      : raw.length >= OFF_THREAD_FROM
        ? await encodeBlobsOffThread(raw, dictionary, options)
        : raw.map((bytes) => encodeBlobSync(bytes, dictionary));
    for (const [i, [hash, bytes]] of small.entries()) {
      if (stored[i]!.length < packUnder) toPack.push([hash, stored[i]!]);
      else if (await writeBlobFile(layout, id, hash, bytes, durable)) written.push(hash);
    }
    if (toPack.length > 0) written.push(...(await writePackedMany(layout, id, toPack, durable)));
  } catch (error) {
    for (const hash of written) await deleteBlobFile(layout, id, hash).catch(() => undefined);
    throw error;
  }
  return written;
}

/** From this many small blobs in one call, they are deflated on a helper thread (blob-codec.ts). */
const OFF_THREAD_FROM = 64;

/** The shard folders of loose blobs that the session has (one listing of its blobs folder). */
function looseShards(layout: SessionLayout, id: string): Set<string> {
  if (!checkStoreFolderSync(id, layout.blobs(id))) return new Set();
  return new Set(readdirSync(layout.blobs(id)).filter((name) => name.length === 2));
}

// A small blob is written with synchronous calls but for its fsyncs: its eight other system calls (the look,
// three folder checks, open, write, close, rename) take less time than the thread-pool round trips of their async
// forms, which were most of a cold workspace scan (docs/ARCHITECTURE.md, "Workspace index"), and 4 of a capture's
// 15 hops. The fsyncs wait on the disk, so they go through the pool.
const SYNC_WRITE_MAX = 256 * 1024;

const fsyncFd = promisify(fsync);

/** {@link writeBlobFile} of a small blob (same steps, same checks), `durable` or not. */
async function writeSmallBlobFile(
  layout: SessionLayout,
  id: string,
  hash: string,
  bytes: Uint8Array,
  durable: boolean,
  encoded?: Uint8Array,
): Promise<boolean> {
  const file = layout.blob(id, hash);
  const incoming = layout.incomingBlobs(id);
  if (lstatSync(file, { throwIfNoEntry: false }) !== undefined || isPacked(layout, id, hash))
    return heldAlready(layout, id, hash, durable);
  checkStoreFolderSync(id, layout.blobs(id));
  let newShard = !checkStoreFolderSync(id, dirname(file));
  checkStoreFolderSync(id, incoming);
  const temp = join(incoming, `${hash}-${randomBytes(4).toString("hex")}`);
  const stored = encoded ?? (layout.compressBlobs ? encodeBlobSync(bytes) : bytes);
  if (newShard) mkdirSync(dirname(file), { recursive: true });
  let fd: number;
  try {
    fd = openSync(temp, "wx", 0o444);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    mkdirSync(incoming, { recursive: true });
    fd = openSync(temp, "wx", 0o444);
  }
  try {
    try {
      for (let written = 0; written < stored.length; )
        written += writeSync(fd, stored, written, stored.length - written);
      if (durable) await fsyncFd(fd);
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(temp, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      mkdirSync(dirname(file), { recursive: true });
      newShard = true;
      renameSync(temp, file);
    }
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  // The blob's name in its shard and a new shard's name in blobs/: independent, so waited for together.
  if (durable) await Promise.all([fsyncDir(dirname(file)), newShard ? fsyncDir(layout.blobs(id)) : undefined]);
  return true;
}

async function retryAfterMkdir<T>(dir: string, attempt: () => Promise<T>, onMade: () => void = () => {}): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    await mkdir(dir, { recursive: true });
    onMade();
    return attempt();
  }
}

/**
 * Deletes a blob, packed or a file. The file's two folder looks are synchronous and its unlink one hop through the
 * thread pool (an unlink can wait on the disk's journal, which the event loop should not): `rm` took some five hops
 * a blob, as it looks before it unlinks, and a rewind that keeps no undo, the next rewind, and `gc` delete a blob
 * for each file they free (docs/ARCHITECTURE.md, "Batched file work").
 */
export async function deleteBlobFile(layout: SessionLayout, id: string, hash: string): Promise<void> {
  await deletePacked(layout, id, [hash]);
  const file = layout.blob(id, hash);
  checkStoreFolderSync(id, layout.blobs(id));
  checkStoreFolderSync(id, dirname(file));
  try {
    await unlink(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}

/**
 * {@link deleteBlobFile} for many: the packed ones in one append to the pack, then the loose ones unlinked a few
 * at a time through the thread pool (an unlink is mostly the filesystem's own work, which the pool's threads do
 * side by side), `blobs/` and each shard checked once (never a link) before anything in them is deleted
 * (docs/ARCHITECTURE.md, "Blobs": deleting what a prune found).
 */
export async function deleteBlobFiles(layout: SessionLayout, id: string, hashes: readonly string[]): Promise<void> {
  const blobs = hashes.filter(isBlobHash);
  await deletePacked(layout, id, blobs);
  if (!checkStoreFolderSync(id, layout.blobs(id))) return;
  const shards = new Map<string, boolean>();
  const loose: string[] = [];
  for (const hash of blobs) {
    const file = layout.blob(id, hash);
    const shard = dirname(file);
    let there = shards.get(shard);
    if (there === undefined) shards.set(shard, (there = checkStoreFolderSync(id, shard)));
    if (there) loose.push(file);
  }
  await forEachLimited(loose, UNLINKS_AT_ONCE, async (file) => {
    try {
      await unlink(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  });
}

/** Loose blob files a prune unlinks at once: the thread pool's four threads, twice over. */
const UNLINKS_AT_ONCE = 8;

/** Removes what blob writes killed mid-way left in `blobs/.incoming/` (never a finished blob). */
export async function discardIncomingBlobs(layout: SessionLayout, id: string): Promise<void> {
  await checkStoreFolder(id, layout.blobs(id));
  await checkStoreFolder(id, layout.incomingBlobs(id)); // rm never follows links below it, only this one
  await rm(layout.incomingBlobs(id), { recursive: true, force: true });
}

/** Every blob hash of a session; temp files left by a crash are not blobs and are not listed. */
export async function listBlobFiles(layout: SessionLayout, id: string): Promise<string[]> {
  const hashes: string[] = [];
  let shards: string[];
  await checkStoreFolder(id, layout.blobs(id));
  try {
    shards = await readdir(layout.blobs(id));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return hashes;
    throw error;
  }
  // Up to 256 shard folders: read them 16 at a time rather than one after another.
  const listed = await mapLimited(
    shards.filter((shard) => /^[0-9a-f]{2}$/.test(shard)),
    16,
    async (shard) => {
      await checkStoreFolder(id, `${layout.blobs(id)}/${shard}`);
      return readdir(`${layout.blobs(id)}/${shard}`);
    },
  );
  for (const names of listed) for (const name of names) if (isBlobHash(name)) hashes.push(name);
  const loose = new Set(hashes);
  for (const hash of listPacked(layout, id)) if (!loose.has(hash)) hashes.push(hash);
  return hashes;
}
