// The bytes a session's pack deflates its small blobs against (docs/ARCHITECTURE.md, "Blobs", the pack's dictionary;
// docs/format.md, "Blob packs"). Drawn once from a large batch of the session's own small blobs (its first
// workspace scan, mostly), kept as blobs/pack/dictionary-<sha256 of its bytes>, never changed or deleted while the
// session lives: an entry deflated against it names it in its header, and is read only with it.
import { createHash, randomBytes } from "node:crypto";
import { closeSync, fsync, fsyncSync, lstatSync, mkdirSync, openSync, renameSync, rmdirSync, writeSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { StoreTamperedError } from "../../core/errors.js";
import { fsyncDir } from "../../core/atomic-file.js";
import type { BlobDictionary } from "./blob-codec.js";
import { packDictionaries } from "./blob-pack.js";
import type { SessionLayout } from "./layout.js";
import { checkStoreFolderSync, readStoreFileNow } from "./store-files.js";

const fsyncFd = promisify(fsync);

/** The most a dictionary holds: all of it within reach of deflate's 32 KiB window from a blob's first byte. */
const DICTIONARY_BYTES = 16 * 1024;
/** What is drawn from each blob (its first bytes), and from how many, spread over the batch. */
const SAMPLE_BYTES = 1024;
const SAMPLES = DICTIONARY_BYTES / SAMPLE_BYTES;
/** A batch of at least this many small blobs gets the pack its dictionary, if it has none. */
export const DICTIONARY_FROM = 64;

const fileName = (hash: string) => `dictionary-${hash}`;
const idOf = (hash: string) => Number.parseInt(hash.slice(0, 8), 16);

/** Dictionaries read and checked against their names, by path, with what a stat said of the file then. */
const loaded = new Map<string, { stamp: string; dictionary: BlobDictionary }>();

function stampOf(info: { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string {
  return `${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
}

/**
 * The dictionary named `hash`, read and checked, or undefined when it is not there or is not what its name says
 * (the blobs that need it then read as damaged: BLOB_CORRUPT). A link or anything but a regular file there is
 * STORE_TAMPERED. One lstat when this process has read it already and the file is as it was.
 */
function load(layout: SessionLayout, id: string, hash: string): BlobDictionary | undefined {
  const path = join(layout.packs(id), fileName(hash));
  const info = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  if (info === undefined) return undefined;
  if (!info.isFile()) throw new StoreTamperedError(id, `${path} is not a regular file`);
  const known = loaded.get(path);
  if (known?.stamp === stampOf(info)) return known.dictionary;
  let bytes: Buffer | undefined;
  try {
    bytes = readStoreFileNow(id, path, DICTIONARY_BYTES + 1, DICTIONARY_BYTES + 1); // never through a link
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  if (!bytes || bytes.length > DICTIONARY_BYTES || createHash("sha256").update(bytes).digest("hex") !== hash)
    return undefined;
  const dictionary = { id: idOf(hash), bytes };
  loaded.set(path, { stamp: stampOf(info), dictionary });
  return dictionary;
}

/** The bytes of the pack's dictionary whose id an entry names, or undefined when it has none such. */
export function dictionaryReader(layout: SessionLayout, id: string): (dictionaryId: number) => Buffer | undefined {
  return (dictionaryId) => {
    for (const look of [false, true])
      for (const hash of packDictionaries(layout, id, look))
        if (idOf(hash) === dictionaryId) {
          const dictionary = load(layout, id, hash);
          if (dictionary) return dictionary.bytes;
        }
    return undefined;
  };
}

/** The dictionary new entries of the pack are deflated against: the first of its dictionaries that reads whole. */
export function packDictionary(layout: SessionLayout, id: string, look = true): BlobDictionary | undefined {
  for (const hash of packDictionaries(layout, id, look)) {
    const dictionary = load(layout, id, hash);
    if (dictionary) return dictionary;
  }
  return undefined;
}

/**
 * {@link packDictionary}, or, when the pack has none and `blobs` (a batch of small blobs about to be packed) are
 * at least DICTIONARY_FROM, one drawn from them and written durably first: an entry is never on disk before the
 * dictionary it names.
 */
export async function dictionaryForBatch(
  layout: SessionLayout,
  id: string,
  blobs: readonly Uint8Array[],
): Promise<BlobDictionary | undefined> {
  const existing = packDictionary(layout, id);
  if (existing || blobs.length < DICTIONARY_FROM) return existing;
  const bytes = drawDictionary(blobs);
  if (bytes.length < DICTIONARY_BYTES / 4) return undefined; // too little in common to draw on
  const hash = createHash("sha256").update(bytes).digest("hex");
  await writeDictionary(layout, id, hash, bytes);
  return { id: idOf(hash), bytes };
}

/**
 * The first bytes of SAMPLES blobs spread over the batch, one after another. What a blob shares with others is
 * mostly near its start (license headers, imports, declarations); deflate reaches the whole of it.
 */
function drawDictionary(blobs: readonly Uint8Array[]): Buffer {
  const parts: Uint8Array[] = [];
  const step = blobs.length / SAMPLES;
  for (let i = 0; i < SAMPLES && Math.floor(i * step) < blobs.length; i++)
    parts.push(blobs[Math.floor(i * step)]!.subarray(0, SAMPLE_BYTES));
  return Buffer.concat(parts).subarray(0, DICTIONARY_BYTES);
}

/** A temp in blobs/.incoming/, fsynced, renamed into the pack folder, the folder fsynced (and blobs/ if it was new). */
async function writeDictionary(layout: SessionLayout, id: string, hash: string, bytes: Buffer): Promise<void> {
  const dir = layout.packs(id);
  const incoming = layout.incomingBlobs(id);
  checkStoreFolderSync(id, layout.blobs(id));
  const newDir = !checkStoreFolderSync(id, dir);
  if (newDir) mkdirSync(dir, { recursive: true });
  const newIncoming = !checkStoreFolderSync(id, incoming);
  if (newIncoming) mkdirSync(incoming, { recursive: true });
  const temp = join(incoming, `dictionary-${randomBytes(4).toString("hex")}`);
  const fd = openSync(temp, "wx", 0o444);
  try {
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, join(dir, fileName(hash)));
  if (newIncoming) rmdirQuietly(incoming); // made for this alone: an empty folder is a block of disk
  await Promise.all([fsyncDir(dir), newDir ? fsyncDir(layout.blobs(id)) : undefined]);
}

function rmdirQuietly(path: string): void {
  try {
    rmdirSync(path);
  } catch {
    // another writer's temp in it meanwhile: left for discardIncomingBlobs
  }
}

/**
 * Copies the pack's dictionaries that read whole into `blobsDir`/pack/ (a fork's staging folder, whose pack holds
 * entries copied from this one), each fsynced. Copied, never linked: as the segments are.
 */
export function copyDictionariesInto(layout: SessionLayout, fromId: string, blobsDir: string): void {
  for (const hash of packDictionaries(layout, fromId, true)) {
    const dictionary = load(layout, fromId, hash);
    if (!dictionary) continue;
    mkdirSync(join(blobsDir, "pack"), { recursive: true });
    const fd = openSync(join(blobsDir, "pack", fileName(hash)), "wx", 0o444);
    try {
      for (let at = 0; at < dictionary.bytes.length; ) at += writeSync(fd, dictionary.bytes, at);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}
