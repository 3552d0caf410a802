import { closeSync, constants, fdatasync, fstatSync, fsyncSync, ftruncateSync, lstatSync, mkdirSync } from "node:fs";
import { openSync, readdirSync, readSync, renameSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { StoreTamperedError } from "../../core/errors.js";
import { fsyncDir } from "../../core/atomic-file.js";
import type { SessionLayout } from "./layout.js";
import { checkStoreFolderSync } from "./store-files.js";
import { forgetPackListing, packListing } from "./pack-listing.js";
import { closeSegmentReaders, readSegment } from "./pack-readers.js";
import {
  BLOB,
  DELETION,
  encodeEntries,
  encodeEntriesSync,
  type Encoded,
  type Framed,
  type PackEntry,
  scanSegment,
  storedOf,
} from "./pack-format.js";

// Small blobs of a session live together in its pack: numbered segment files under blobs/pack/, each a run of
// entries appended under the session lock (docs/ARCHITECTURE.md, "Blobs"; the bytes: pack-format.ts). What a
// process knows of a pack is kept here, per pack folder, and brought up to date from the files themselves:
// by reading only what was appended since, or from the start when a segment came or went.

const fdatasyncAsync = promisify(fdatasync);
/** A pack is rewritten without its dead entries once they are at least this many bytes and half of it. */
const COMPACT_FROM_BYTES = 256 * 1024;

interface Segment {
  seq: number;
  ino: number;
  /** Where the whole entries end (scanned this far). */
  end: number;
  /** The file's size when last looked at. */
  size: number;
  after: "nothing" | "torn" | "damaged";
  /** Bytes from the start that this process made durable, its folder entry too (a durable append, syncPacked). */
  synced?: number;
}
/** Where a live blob is: its segment, and its entry's place and shape there (pack-format.ts). */
interface Located extends Omit<PackEntry, "kind" | "hash"> {
  seq: number;
}
interface PackIndex {
  segments: Segment[];
  /** The sha256 names of the pack's dictionaries (pack-dictionary.ts), sorted, as the folder last listed them. */
  dictionaries: string[];
  live: Map<string, Located>;
  /** Bytes of the live entries, headers included. */
  liveBytes: number;
}

const indexes = new Map<string, PackIndex>();

function segmentPath(layout: SessionLayout, id: string, seq: number): string {
  return join(layout.packs(id), `${String(seq).padStart(8, "0")}.pack`);
}

/**
 * Opens a file of the pack (a segment, a dictionary) never through a link, and only a regular file
 * (docs/ARCHITECTURE.md, "Confinement").
 */
function openPackFile(id: string, path: string, flags: number): number {
  let fd: number;
  try {
    fd = openSync(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") throw new StoreTamperedError(id, `${path} is a symlink`, { cause: error });
    if (code === "ENXIO") throw new StoreTamperedError(id, `${path} is a FIFO or socket`, { cause: error });
    throw error;
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new StoreTamperedError(id, `${path} is not a regular file`);
  }
  return fd;
}

function readAt(fd: number, offset: number, length: number): Buffer {
  const bytes = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const read = readSync(fd, bytes, filled, length - filled, offset + filled);
    if (read === 0) break;
    filled += read;
  }
  return bytes.subarray(0, filled);
}

function apply(index: PackIndex, seq: number, entries: readonly PackEntry[]): void {
  for (const { kind, hash, ...where } of entries) {
    const before = index.live.get(hash);
    if (before) index.liveBytes -= before.size;
    if (kind === DELETION) index.live.delete(hash);
    else {
      index.live.set(hash, { seq, ...where });
      index.liveBytes += where.size;
    }
  }
}

/** Reads what `segment` gained since last looked at; false when it is not the file it was (start again). */
function catchUp(layout: SessionLayout, id: string, index: PackIndex, segment: Segment): boolean {
  const path = segmentPath(layout, id, segment.seq);
  if (segment.ino !== 0) {
    // The file read before, at the size it had then: nothing new to read (one stat, where an open takes three).
    const info = lstatSync(path);
    if (info.isFile() && info.ino === segment.ino && info.size === segment.size) return true;
  }
  const fd = openPackFile(id, path, constants.O_RDONLY);
  try {
    const info = fstatSync(fd);
    if (segment.ino !== 0 && (info.ino !== segment.ino || info.size < segment.end)) return false;
    segment.ino = info.ino;
    if (info.size === segment.size) return true;
    const scan = scanSegment(readAt(fd, segment.end, info.size - segment.end), segment.end);
    apply(index, segment.seq, scan.entries);
    Object.assign(segment, { end: scan.end, size: info.size, after: scan.after });
    return true;
  } finally {
    closeSync(fd);
  }
}

/**
 * The pack as the files hold it now: the segments listed, each read from where this process left off, or
 * all from the start when the list changed (a compaction, a new segment) or a segment is not the file it was.
 */
export function packIndex(layout: SessionLayout, id: string): PackIndex {
  const dir = layout.packs(id);
  for (let attempt = 0; ; attempt++) {
    try {
      return lookAgain(layout, id, dir);
    } catch (error) {
      // A segment deleted between the listing and its read: a compaction finished meanwhile; list again.
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" || attempt >= 8) throw error;
      indexes.delete(dir);
      forgetPackListing(dir);
    }
  }
}

function lookAgain(layout: SessionLayout, id: string, dir: string): PackIndex {
  checkStoreFolderSync(id, layout.blobs(id));
  const { seqs, dictionaries } = packListing(id, dir);
  let index = indexes.get(dir);
  const same = index && index.segments.length === seqs.length && index.segments.every((s, i) => s.seq === seqs[i]);
  if (!index || !same) index = fresh(seqs);
  for (const segment of index.segments) {
    if (catchUp(layout, id, index, segment)) continue;
    index = fresh(seqs);
    for (const again of index.segments) catchUp(layout, id, index, again);
    break;
  }
  index.dictionaries = dictionaries;
  indexes.set(dir, index);
  return index;
}

function fresh(seqs: readonly number[]): PackIndex {
  const segments = seqs.map((seq) => ({ seq, ino: 0, end: 0, size: 0, after: "nothing" as const }));
  return { segments, dictionaries: [], live: new Map(), liveBytes: 0 };
}

/**
 * The hashes of the pack's dictionaries: as this process last listed the folder, or listed now when `look` (or
 * never listed before).
 */
export function packDictionaries(layout: SessionLayout, id: string, look: boolean): readonly string[] {
  const known = look ? undefined : indexes.get(layout.packs(id));
  return (known ?? packIndex(layout, id)).dictionaries;
}

/**
 * The stored bytes of a packed blob (as its loose file would hold them), or undefined when the pack does not
 * hold it. `look`: bring the index up to date first; without it, only what this process already knows is
 * tried, and a remembered place that no longer holds the blob (a compaction by another process) is looked up
 * again.
 */
export function readPacked(layout: SessionLayout, id: string, hash: string, look: boolean): Buffer | undefined {
  let index = look ? packIndex(layout, id) : indexes.get(layout.packs(id));
  for (let attempt = 0; index && attempt < 3; attempt++) {
    const where = index.live.get(hash);
    if (!where) return undefined;
    const entry = readEntry(layout, id, where, index);
    const stored = entry && storedOf(entry, hash, where);
    if (stored) return stored;
    indexes.delete(layout.packs(id));
    index = packIndex(layout, id);
  }
  return undefined;
}

/** The entry at `where`, read through the segment kept open from the last read under `index` (pack-readers.ts). */
function readEntry(layout: SessionLayout, id: string, where: Located, index: PackIndex): Buffer | undefined {
  const path = segmentPath(layout, id, where.seq);
  const open = () => {
    checkStoreFolderSync(id, layout.blobs(id)); // never through a link, also where this process knows the place
    if (!checkStoreFolderSync(id, layout.packs(id))) throw Object.assign(new Error("no pack"), { code: "ENOENT" });
    return openPackFile(id, path, constants.O_RDONLY);
  };
  try {
    return readSegment(path, index, open, (fd) => {
      const entry = readAt(fd, where.offset, where.head + where.length);
      return entry.length === where.head + where.length ? entry : undefined;
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Bytes a packed blob takes in its segment (header included), or undefined when the pack does not hold it. */
export function packedBytes(layout: SessionLayout, id: string, hash: string): number | undefined {
  return packIndex(layout, id).live.get(hash)?.size;
}

export function isPacked(layout: SessionLayout, id: string, hash: string): boolean {
  return holdsWhole(packIndex(layout, id), hash);
}

export function listPacked(layout: SessionLayout, id: string): string[] {
  return [...packIndex(layout, id).live.keys()];
}

/** How many files the pack has, segments and dictionaries (they are not blobs, though they sit among them). */
export function packFileCount(layout: SessionLayout, id: string): number {
  const index = packIndex(layout, id);
  return index.segments.length + index.dictionaries.length;
}

/**
 * Appends entries to the newest segment in one write, under the session lock: a torn tail a crash left is cut
 * first; a segment damaged in its middle is left as it is and a new one started. `index` is the pack as the caller
 * looked at it in this same synchronous step (packIndex), so no other append of this process comes between the look
 * and the write. `durable` then waits for an fdatasync (and the folders' fsyncs when the segment is new), as a
 * loose blob's write waits for its fsync. What it wrote is known, so it is not read back: scanning it again checked
 * every entry twice more (a third of a cold scan's pack time).
 */
async function appendEncoded(layout: SessionLayout, id: string, index: PackIndex, encoded: Encoded, durable: boolean) {
  const { bytes: entry, entries } = encoded;
  const dir = layout.packs(id);
  let segment = index.segments.at(-1);
  let made = false;
  let madeDir = false;
  let fd: number;
  if (!segment || segment.after === "damaged") {
    const seq = (segment?.seq ?? 0) + 1;
    madeDir = !checkStoreFolderSync(id, dir);
    if (madeDir) mkdirSync(dir, { recursive: true });
    fd = openPackFile(id, segmentPath(layout, id, seq), constants.O_RDWR | constants.O_CREAT | constants.O_EXCL);
    segment = { seq, ino: fstatSync(fd).ino, end: 0, size: 0, after: "nothing" };
    index.segments.push(segment);
    made = true;
  } else fd = openPackFile(id, segmentPath(layout, id, segment.seq), constants.O_RDWR);
  try {
    if (segment.after === "torn") ftruncateSync(fd, segment.end);
    for (let written = 0; written < entry.length; )
      written += writeSync(fd, entry, written, entry.length - written, segment.end + written);
    const base = segment.end;
    apply(
      index,
      segment.seq,
      entries.map((appended) => ({ ...appended, offset: base + appended.offset })),
    );
    const end = base + entry.length;
    Object.assign(segment, { end, size: end, after: "nothing" });
    if (durable) await fdatasyncAsync(fd);
  } finally {
    closeSync(fd);
  }
  // Not durable, the folders are made durable with the segment's bytes by syncBlobs (syncPacked, or a syncfs).
  if (made && durable)
    await Promise.all([fsyncDir(dir), madeDir ? fsyncDir(layout.blobs(id)).catch(() => undefined) : undefined]);
  if (durable && (made || segment.synced !== undefined)) segment.synced = segment.end;
}

/** Whether the pack, as `index` holds it, has the blob whole. */
export function holdsWhole(index: PackIndex, hash: string): boolean {
  const where = index.live.get(hash);
  return where !== undefined && !where.damaged;
}

/**
 * Appends one blob's stored bytes to the pack that `index` is the caller's look at, taken in this same synchronous
 * step: a capture's blob costs one look at the pack, not one for each question it asks of it.
 */
export async function appendPacked(
  layout: SessionLayout,
  id: string,
  index: PackIndex,
  hash: string,
  stored: Uint8Array,
  durable: boolean,
): Promise<boolean> {
  if (holdsWhole(index, hash)) return false;
  await appendEncoded(layout, id, index, encodeEntriesSync([{ kind: BLOB, hash, body: stored }]), durable);
  return true;
}

/**
 * Writes many blobs' stored bytes into the pack as one append: one look at the pack, one segment opened, one
 * write, one fdatasync when `durable`. Returns the hashes it wrote (those the pack already holds whole, or
 * that come twice, are written once or not at all). A per-blob {@link writePacked} looks at the pack each time:
 * a cold scan of 50k files spent a third of its time there.
 */
export async function writePackedMany(
  layout: SessionLayout,
  id: string,
  blobs: Iterable<readonly [hash: string, stored: Uint8Array]>,
  durable: boolean,
): Promise<string[]> {
  const index = packIndex(layout, id);
  const fresh = new Map<string, Uint8Array>();
  for (const [hash, stored] of blobs) {
    const where = index.live.get(hash);
    if ((where === undefined || where.damaged) && !fresh.has(hash)) fresh.set(hash, stored);
  }
  if (fresh.size === 0) return [];
  const encoded = await encodeEntries([...fresh].map(([hash, body]) => ({ kind: BLOB, hash, body })));
  await appendEncoded(layout, id, packIndex(layout, id), encoded, durable);
  return [...fresh.keys()];
}

/** Which of `hashes` the pack holds whole: one look at the pack for them all. */
export function packedAmong(layout: SessionLayout, id: string, hashes: readonly string[]): Set<string> {
  const packed = new Set<string>();
  if (hashes.length === 0) return packed; // no look at the pack
  const index = packIndex(layout, id);
  for (const hash of hashes) {
    const where = index.live.get(hash);
    if (where !== undefined && !where.damaged) packed.add(hash);
  }
  return packed;
}

/** Makes packed blobs written without `durable` durable: each segment holding one, and the pack folder. */
export async function syncPacked(layout: SessionLayout, id: string, hashes: readonly string[]): Promise<void> {
  const index = packIndex(layout, id);
  const seqs = new Set(hashes.map((hash) => index.live.get(hash)?.seq).filter((seq) => seq !== undefined));
  // Not again a segment this process made durable through all it knows of it: a capture of a file that did not
  // change would make three more calls through the pool (the segment, its two folders). One another process
  // appended to, or a scan without an fsync, is synced (test/checkpoint/scanned-blobs-durable.process.test.ts).
  const unsynced = index.segments.filter((s) => seqs.has(s.seq) && !(s.synced !== undefined && s.synced >= s.end));
  if (unsynced.length === 0) return;
  const ends = unsynced.map((s) => [s, s.end] as const); // each made durable this far by the fdatasync below
  await Promise.all([
    ...unsynced.map(async ({ seq }) => {
      const fd = openPackFile(id, segmentPath(layout, id, seq), constants.O_RDONLY);
      try {
        await fdatasyncAsync(fd);
      } finally {
        closeSync(fd);
      }
    }),
    fsyncDir(layout.packs(id)),
    fsyncDir(layout.blobs(id)),
  ]);
  for (const [segment, end] of ends) segment.synced = Math.max(segment.synced ?? 0, end);
}

/**
 * Deletes those of `hashes` the pack holds, under the session lock: their deletion entries in one append (not
 * fsynced, like a loose blob's unlink; a prune of 2,000 blobs was 2,000 appends, each a look at the pack, an open
 * and a write), then, once dead entries are at least COMPACT_FROM_BYTES and half the pack, a compaction.
 */
export async function deletePacked(layout: SessionLayout, id: string, hashes: readonly string[]): Promise<void> {
  const live = packIndex(layout, id).live;
  const doomed = [...new Set(hashes)].filter((hash) => live.has(hash));
  if (doomed.length === 0) return;
  const encoded = await encodeEntries(doomed.map((hash) => ({ kind: DELETION, hash }) as const));
  await appendEncoded(layout, id, packIndex(layout, id), encoded, false);
  const index = packIndex(layout, id);
  const total = index.segments.reduce((sum, segment) => sum + segment.size, 0);
  const dead = total - index.liveBytes;
  if (dead >= COMPACT_FROM_BYTES && dead * 2 >= total) compactPack(layout, id);
}

/** Compacts the pack when it holds any dead bytes (`gc`: what it deleted is then freed). */
export function compactPackIfDead(layout: SessionLayout, id: string): void {
  const index = packIndex(layout, id);
  const total = index.segments.reduce((sum, segment) => sum + segment.size, 0);
  if (index.segments.length > 0 && total > index.liveBytes) compactPack(layout, id);
}

/**
 * Rewrites the pack as one new segment holding only its live entries: written in blobs/.incoming/, fsynced,
 * renamed in as the next number, the folder fsynced, then the older segments deleted, oldest first. A crash
 * anywhere leaves either the old segments (and a temp file the next compaction removes) or the new one beside some:
 * read in order, the new one names exactly what they held alive, so every reader sees the same blobs.
 * Synchronous throughout, so no write of this process lands in a segment after it was copied.
 */
export function compactPack(layout: SessionLayout, id: string): void {
  const index = packIndex(layout, id);
  const dir = layout.packs(id);
  const seq = (index.segments.at(-1)?.seq ?? 0) + 1;
  const incoming = layout.incomingBlobs(id);
  if (!checkStoreFolderSync(id, incoming)) mkdirSync(incoming, { recursive: true });
  // What an earlier compaction killed mid-way left: under the lock, nobody's.
  for (const name of readdirSync(incoming)) if (name.startsWith("pack-")) rmSync(join(incoming, name), { force: true });
  const temp = join(incoming, `pack-${seq}-${randomBytes(4).toString("hex")}`);
  const live: Framed[] = [];
  for (const segment of index.segments) {
    const fd = openPackFile(id, segmentPath(layout, id, segment.seq), constants.O_RDONLY);
    try {
      for (const [hash, where] of index.live) if (where.seq === segment.seq) live.push(framedAt(id, fd, hash, where));
    } finally {
      closeSync(fd);
    }
  }
  const fd = openSync(temp, "wx", 0o644);
  try {
    const { bytes } = encodeEntriesSync(live);
    for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  renameSync(temp, segmentPath(layout, id, seq));
  const dirFd = openSync(dir, "r");
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
  for (const segment of index.segments) unlinkSync(segmentPath(layout, id, segment.seq));
  indexes.delete(dir);
  closeSegmentReaders(dir);
}

/**
 * A live blob of the pack as an entry to write again (a compaction's, a fork's copy), read from the segment `fd`
 * holds. Under the session lock the index was just brought up to date from the files, so a place that no longer
 * holds its blob is a file changed under the lock: STORE_TAMPERED, before anything is written.
 */
function framedAt(id: string, fd: number, hash: string, where: Located): Framed {
  const stored = storedOf(readAt(fd, where.offset, where.head + where.length), hash, where);
  if (stored === undefined)
    throw new StoreTamperedError(id, `the pack's segment ${where.seq} no longer holds ${hash} where it did`);
  return { kind: BLOB, hash, body: stored, damaged: where.damaged };
}

/**
 * Copies the packed ones of `hashes` from a session's pack into a new pack under `blobsDir` (a fork's staging
 * folder), fsynced; returns the hashes it copied. A pack is never hard-linked: the two would share its appends.
 */
export function copyPackedInto(
  layout: SessionLayout,
  fromId: string,
  blobsDir: string,
  hashes: Iterable<string>,
): Set<string> {
  const index = packIndex(layout, fromId);
  const copied = new Set<string>();
  const parts: Framed[] = [];
  const fds = new Map<number, number>();
  try {
    for (const hash of hashes) {
      const where = index.live.get(hash);
      if (!where || copied.has(hash)) continue;
      let fd = fds.get(where.seq);
      if (fd === undefined) {
        fd = openPackFile(fromId, segmentPath(layout, fromId, where.seq), constants.O_RDONLY);
        fds.set(where.seq, fd);
      }
      parts.push(framedAt(fromId, fd, hash, where));
      copied.add(hash);
    }
  } finally {
    for (const fd of fds.values()) closeSync(fd);
  }
  if (parts.length === 0) return copied;
  mkdirSync(join(blobsDir, "pack"), { recursive: true });
  const fd = openSync(join(blobsDir, "pack", "00000001.pack"), "wx", 0o644);
  try {
    const { bytes } = encodeEntriesSync(parts);
    for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return copied;
}
