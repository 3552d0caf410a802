// How a blob's bytes sit in its file: raw, or compressed behind a marker (docs/ARCHITECTURE.md, "Blobs").
import { promisify } from "node:util";
import { deflateRaw, deflateRawSync, inflateRaw, inflateRawSync } from "node:zlib";
import { HelperThread } from "../../core/helper-thread.js";
import { yieldIfLong } from "../../core/time-slices.js";

/**
 * The marker that opens a compressed blob file: a NUL, "atz", a method byte and the original
 * length (6 bytes, big-endian). A blob written before compression existed is its raw bytes; one
 * that happens to start with these four bytes and does not decode is read raw, so every old blob
 * still reads (its name, the sha256 of what is returned, is checked by the caller as before).
 */
const MAGIC = Buffer.from([0x00, 0x61, 0x74, 0x7a]);
export const HEADER_BYTES = MAGIC.length + 1 + 6;
/** The bytes follow the header unchanged: a raw blob that starts with MAGIC is written this way. */
const STORED = 0;
/** deflate-raw at level 6: chosen by measurement on source code (docs/ARCHITECTURE.md, "Blobs"). */
export const DEFLATE_RAW = 1;
/**
 * deflate-raw against a preset dictionary: the header goes on with the dictionary's id (4 bytes), then the body.
 * Only a pack's entries are written this way, with the pack's dictionary (pack-dictionary.ts).
 */
export const DEFLATE_RAW_DICTIONARY = 2;
const DICTIONARY_ID_BYTES = 4;

/** Bytes a blob may be deflated against, and the id its header names them by (the first 4 bytes of their sha256). */
export interface BlobDictionary {
  id: number;
  bytes: Buffer;
}
const LEVEL = 6;
/** Below this a blob is stored raw: the header and deflate's framing eat most of what it would save. */
const MIN_COMPRESS_BYTES = 128;
/** Compressed output must save at least this share, or the blob is stored raw (incompressible content). */
const MIN_SAVING = 0.1;
/** Above this, (de)compression runs on the thread pool rather than blocking the event loop. */
const SYNC_LIMIT = 256 * 1024;

/**
 * zlib's options for deflating `length` bytes: LEVEL, with a window no larger than the bytes (any decoder's
 * 32 KiB window reads it) and, under 4 KiB, a smaller hash table. At its defaults zlib takes 256 KiB of memory per
 * call; allocated and freed for each small blob, it page-faulted in: deflating a 1,000-file rewind's undo blobs
 * took 60-120 ms in a process that had worked a while, 16 ms this way, the output the same size within 0.05 %
 * (docs/ARCHITECTURE.md, "Blobs"). Its output goes into one buffer of the blob's length (and 64 bytes) where
 * that is smaller than zlib's 16 KiB chunk, as an inflate's does: a 16 KiB buffer for each small blob was memory
 * page-faulted in again for each too.
 */
export function deflateOptions(length: number): {
  level: number;
  windowBits: number;
  memLevel: number;
  chunkSize: number;
} {
  const windowBits = Math.max(9, Math.min(15, Math.ceil(Math.log2(Math.max(length, 1)))));
  return { level: LEVEL, windowBits, memLevel: windowBits <= 12 ? 7 : 8, chunkSize: outputChunk(length) };
}

/** zlib's output chunk for deflating `length` bytes: all of a small blob's output at once, else zlib's default. */
function outputChunk(length: number): number {
  return Math.min(length + 64, ZLIB_CHUNK);
}
const ZLIB_CHUNK = 16 * 1024;

/**
 * zlib's options for deflating against `dictionary`: the whole 32 KiB window, so that all of a dictionary of up to
 * 16 KiB can be reached from the blob's first byte, and the smaller hash table for a small blob.
 */
function dictionaryOptions(length: number, dictionary: Buffer) {
  return { level: LEVEL, windowBits: 15, memLevel: length < 4096 ? 7 : 8, dictionary, chunkSize: outputChunk(length) };
}

const deflateAsync = promisify(deflateRaw);
const inflateAsync = promisify(inflateRaw);

/** The bytes to write for a blob: compressed when that saves at least MIN_SAVING, else as they are. */
export async function encodeBlob(bytes: Uint8Array): Promise<Uint8Array> {
  if (bytes.length <= SYNC_LIMIT) return encodeBlobSync(bytes);
  const body = await deflateAsync(bytes, deflateOptions(bytes.length));
  if (HEADER_BYTES + body.length <= bytes.length * (1 - MIN_SAVING))
    return Buffer.concat([header(DEFLATE_RAW, bytes.length), body]);
  // Raw bytes that look like a marker get one, so they are never mistaken for a compressed blob.
  if (startsWithMagic(bytes)) return Buffer.concat([header(STORED, bytes.length), bytes]);
  return bytes;
}

/**
 * {@link encodeBlob} of a blob of at most SYNC_LIMIT bytes, for the synchronous write of small blobs; against
 * `dictionary` when given (a pack's entry: decoded only with the same dictionary).
 */
export function encodeBlobSync(bytes: Uint8Array, dictionary?: BlobDictionary): Uint8Array {
  if (bytes.length > SYNC_LIMIT) throw new RangeError(`encodeBlobSync takes at most ${SYNC_LIMIT} bytes`);
  if (bytes.length < MIN_COMPRESS_BYTES) return storedForm(bytes, undefined);
  if (dictionary === undefined) return storedForm(bytes, deflateRawSync(bytes, deflateOptions(bytes.length)));
  return storedForm(bytes, deflateRawSync(bytes, dictionaryOptions(bytes.length, dictionary.bytes)), dictionary.id);
}

/** What is stored for `bytes` given their deflate-raw `body` (undefined: too small to try), made against a dictionary
 * when `dictionaryId` is given. */
function storedForm(bytes: Uint8Array, body: Uint8Array | undefined, dictionaryId?: number): Uint8Array {
  if (body !== undefined && dictionaryId !== undefined) {
    const head = HEADER_BYTES + DICTIONARY_ID_BYTES;
    if (head + body.length <= bytes.length * (1 - MIN_SAVING)) {
      const out = Buffer.allocUnsafe(head + body.length);
      header(DEFLATE_RAW_DICTIONARY, bytes.length).copy(out);
      out.writeUInt32BE(dictionaryId, HEADER_BYTES);
      out.set(body, head);
      return out;
    }
    body = undefined; // not worth it: raw, as below
  }
  if (body !== undefined && HEADER_BYTES + body.length <= bytes.length * (1 - MIN_SAVING))
    return Buffer.concat([header(DEFLATE_RAW, bytes.length), body]);
  if (startsWithMagic(bytes)) return Buffer.concat([header(STORED, bytes.length), bytes]);
  return bytes;
}

// The helper thread: deflates each blob of a job at LEVEL (length -1 for those under MIN_COMPRESS_BYTES). The blobs
// come as one buffer and go back as one, both moved rather than copied: a structured clone of each Buffer copied
// the whole memory it is a view of (a read's chunk, zlib's output chunk), and taking 1,000 answers back held the
// event loop 30-45 ms (docs/ARCHITECTURE.md, "Batched file work").
const deflater = new HelperThread<Joined, Joined>(`
const { parentPort } = require("node:worker_threads");
const { deflateRawSync } = require("node:zlib");
// deflateOptions and dictionaryOptions, as text (test/backend/fs-blob-codec-thread.property.test.ts holds the two
// to the same bytes).
const outputChunk = (length) => Math.min(length + 64, ${ZLIB_CHUNK});
const deflateOptions = (length) => {
  const windowBits = Math.max(9, Math.min(15, Math.ceil(Math.log2(Math.max(length, 1)))));
  return { level: ${LEVEL}, windowBits, memLevel: windowBits <= 12 ? 7 : 8, chunkSize: outputChunk(length) };
};
const dictionaryOptions = (length, dictionary) =>
  ({ level: ${LEVEL}, windowBits: 15, memLevel: length < 4096 ? 7 : 8, dictionary, chunkSize: outputChunk(length) });
parentPort.on("message", ({ id, job }) => {
  const outs = [];
  let at = 0;
  let total = 0;
  const dictionary = job.dictionary ? Buffer.from(job.dictionary) : null;
  for (const length of job.lengths) {
    const bytes = Buffer.from(job.bytes.buffer, job.bytes.byteOffset + at, length);
    at += length;
    const options = dictionary ? dictionaryOptions(length, dictionary) : deflateOptions(length);
    const out = length >= ${MIN_COMPRESS_BYTES} ? deflateRawSync(bytes, options) : null;
    outs.push(out);
    if (out) total += out.length;
  }
  const bytes = new Uint8Array(total);
  let into = 0;
  const lengths = outs.map((out) => {
    if (!out) return -1;
    bytes.set(out, into);
    into += out.length;
    return out.length;
  });
  parentPort.postMessage({ id, answer: { bytes, lengths } }, [bytes.buffer]);
});
`);

/** Many byte strings as one buffer and their lengths (-1: none), for one move to or from the helper thread. */
interface Joined {
  bytes: Uint8Array;
  lengths: number[];
  /** What to deflate them against (sent as a copy: the caller keeps it). */
  dictionary?: Uint8Array;
}

/**
 * {@link encodeBlobSync} of many small blobs, their deflating done on a helper thread (one message each way for
 * them all) while this thread goes on reading the next files: a cold scan of 50k files spent a sixth of its time
 * deflating (docs/ARCHITECTURE.md, "Workspace index"). Here when the thread is not there. `callerWaits`: the caller
 * has nothing to do meanwhile (a rewind's undo copy), so this thread deflates the second half itself, a time slice
 * at a time, while the helper does the first: a 1,000-file rewind's undo copy deflated in 42-78 ms, not 64-111
 * (docs/ARCHITECTURE.md, "Batched file work").
 */
export async function encodeBlobsOffThread(
  blobs: readonly Uint8Array[],
  dictionary?: BlobDictionary,
  options: { callerWaits?: boolean } = {},
): Promise<Uint8Array[]> {
  if (!options.callerWaits || blobs.length < 2) return encodeOnHelper(blobs, dictionary);
  const half = Math.ceil(blobs.length / 2);
  const first = encodeOnHelper(blobs.slice(0, half), dictionary);
  const second: Uint8Array[] = [];
  for (const bytes of blobs.slice(half)) {
    second.push(encodeBlobSync(bytes, dictionary));
    await yieldIfLong();
  }
  return [...(await first), ...second];
}

async function encodeOnHelper(blobs: readonly Uint8Array[], dictionary?: BlobDictionary): Promise<Uint8Array[]> {
  const joined = new Uint8Array(blobs.reduce((sum, bytes) => sum + bytes.length, 0));
  let into = 0;
  for (const bytes of blobs) {
    joined.set(bytes, into);
    into += bytes.length;
  }
  const job: Joined = { bytes: joined, lengths: blobs.map((bytes) => bytes.length) };
  if (dictionary) job.dictionary = dictionary.bytes;
  const answer = await deflater.ask(job, [joined.buffer]);
  if (answer === undefined || answer.lengths.length !== blobs.length)
    return blobs.map((bytes) => encodeBlobSync(bytes, dictionary));
  const out = Buffer.from(answer.bytes.buffer, answer.bytes.byteOffset, answer.bytes.length);
  let at = 0;
  return blobs.map((bytes, i) => {
    const length = answer.lengths[i]!;
    if (length < 0) return storedForm(bytes, undefined);
    at += length;
    return storedForm(bytes, out.subarray(at - length, at), dictionary?.id);
  });
}

/**
 * A blob's original bytes from what its file holds (or the first `maxBytes + 1` of them: see
 * {@link readBlobFile}). Unverified: the caller re-hashes. With `maxBytes`, a blob claiming more is not
 * inflated at all: its raw prefix comes back, longer than recorded, and the caller refuses it.
 */
export async function decodeBlob(
  stored: Buffer,
  maxBytes = Number.POSITIVE_INFINITY,
  dictionaryOf: (id: number) => Buffer | undefined = () => undefined,
): Promise<Buffer> {
  const raw = () => (stored.length > maxBytes ? stored.subarray(0, maxBytes + 1) : stored);
  if (stored.length < HEADER_BYTES || !startsWithMagic(stored)) return raw();
  const method = stored[MAGIC.length];
  const length = stored.readUIntBE(MAGIC.length + 1, 6);
  const body = stored.subarray(HEADER_BYTES);
  // Looked up outside the try below: a dictionary that is a link is STORE_TAMPERED, not a blob read raw.
  const dictionary =
    method === DEFLATE_RAW_DICTIONARY && body.length >= DICTIONARY_ID_BYTES
      ? dictionaryOf(body.readUInt32BE(0))
      : undefined;
  try {
    if (method === STORED && body.length === length) return length > maxBytes ? body.subarray(0, maxBytes + 1) : body;
    if (method === DEFLATE_RAW_DICTIONARY && length <= maxBytes && length <= SYNC_LIMIT) {
      // Its dictionary missing or not the one it was made with: the raw bytes go back and the hash check refuses them.
      if (dictionary !== undefined) {
        const options = { maxOutputLength: Math.max(1, length), chunkSize: Math.max(64, length + 64), dictionary };
        const out = inflateRawSync(body.subarray(DICTIONARY_ID_BYTES), options);
        if (out.length === length) return out;
      }
    }
    if (method === DEFLATE_RAW && length <= maxBytes) {
      // maxOutputLength: a planted "blob" cannot inflate past the length it claims, and (above) a claim past what
      // the snapshot recorded is not inflated at all (a zip bomb: docs/ARCHITECTURE.md, "Blobs").
      // chunkSize: one output buffer of the claimed length (and a little, to see the stream end), not zlib's 16 KiB
      // chunks: 1,000 small blobs inflated in 6-11 ms, not 11-45 (docs/ARCHITECTURE.md, "Blobs", zlib's memory).
      const options = { maxOutputLength: Math.max(1, length), chunkSize: Math.max(64, length + 64) };
      const out = length > SYNC_LIMIT ? await inflateAsync(body, options) : inflateRawSync(body, options);
      if (out.length === length) return out;
    }
  } catch {
    // Not ours after all (an old raw blob that starts with the marker), or damaged: the raw bytes
    // go back, and the caller's hash check tells which.
  }
  return raw();
}

/** {@link StoredParts.how} of stored bytes without a header: the blob's raw bytes. */
export const AS_THEY_ARE = 0xff;

/** A blob's stored bytes taken apart, for a pack run's member, which keeps the header's values in its row. */
export interface StoredParts {
  /** The header's method, or AS_THEY_ARE for bytes that have none (a raw blob). */
  how: number;
  /** The original length the header claims (the bytes' own length when they have none). */
  length: number;
  /** The id of the dictionary a DEFLATE_RAW_DICTIONARY body needs; 0 for any other. */
  dictionary: number;
  body: Uint8Array;
}

/** `stored` taken apart; {@link storedBytes} puts it back together byte for byte, whatever the bytes are. */
export function storedParts(stored: Uint8Array): StoredParts {
  const head = blobHeader(stored);
  if (head !== undefined && (head.method === STORED || head.method === DEFLATE_RAW))
    return { how: head.method, length: head.length, dictionary: 0, body: stored.subarray(HEADER_BYTES) };
  if (head !== undefined && head.method === DEFLATE_RAW_DICTIONARY && stored.length >= HEADER_BYTES + 4) {
    const dictionary = Buffer.from(stored.buffer, stored.byteOffset, stored.length).readUInt32BE(HEADER_BYTES);
    return { how: head.method, length: head.length, dictionary, body: stored.subarray(HEADER_BYTES + 4) };
  }
  return { how: AS_THEY_ARE, length: stored.length, dictionary: 0, body: stored };
}

/** How many bytes {@link storedBytes} gives back for `parts`, without putting them together. */
export function storedLength({ how, body }: StoredParts): number {
  if (how === AS_THEY_ARE) return body.length;
  return HEADER_BYTES + (how === DEFLATE_RAW_DICTIONARY ? DICTIONARY_ID_BYTES : 0) + body.length;
}

/** The stored bytes {@link storedParts} took apart. */
export function storedBytes({ how, length, dictionary, body }: StoredParts): Buffer {
  if (how === AS_THEY_ARE) return Buffer.from(body.buffer, body.byteOffset, body.length);
  const head = header(how, length);
  if (how !== DEFLATE_RAW_DICTIONARY) return Buffer.concat([head, body]);
  const id = Buffer.alloc(DICTIONARY_ID_BYTES);
  id.writeUInt32BE(dictionary);
  return Buffer.concat([head, id, body]);
}

/** The method and claimed length of a blob file's header, or undefined when it has none (a raw blob). */
export function blobHeader(head: Uint8Array): { method: number; length: number } | undefined {
  if (head.length < HEADER_BYTES || !startsWithMagic(head)) return undefined;
  return {
    method: head[MAGIC.length]!,
    length: Buffer.from(head.buffer, head.byteOffset).readUIntBE(MAGIC.length + 1, 6),
  };
}

function header(method: number, length: number): Buffer {
  const head = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(head);
  head[MAGIC.length] = method;
  head.writeUIntBE(length, MAGIC.length + 1, 6);
  return head;
}

function startsWithMagic(bytes: Uint8Array): boolean {
  if (bytes.length < MAGIC.length) return false;
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) return false;
  return true;
}
