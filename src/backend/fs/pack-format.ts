// How small blobs sit together in a pack segment (docs/format.md, "Blob packs"; docs/ARCHITECTURE.md, "Blobs").
import { createHash } from "node:crypto";

/**
 * One entry of a segment: a 52-byte header, then the blob as its loose file would hold it (blob-codec.ts).
 *
 *   0  "ATPB"          magic
 *   4  kind            1 = a blob, 2 = a deletion (no body)
 *   5  3 zero bytes
 *   8  body length     u32 big-endian (0 for a deletion)
 *  12  sha256          32 bytes: the blob's name, the hash of its original bytes
 *  44  header check    the first 4 bytes of sha256(bytes 0..43)
 *  48  body check      the first 4 bytes of sha256(body)
 */
export const ENTRY_HEADER_BYTES = 52;
const MAGIC = Buffer.from("ATPB", "latin1");
export const BLOB = 1;
export const DELETION = 2;

export interface PackEntry {
  kind: typeof BLOB | typeof DELETION;
  hash: string;
  /** Where the entry starts in its segment. */
  offset: number;
  /** The body's length (the blob as stored: compressed where that paid). */
  length: number;
  /** The body fails its check: read back as it is, and the reader's hash check refuses it. */
  damaged: boolean;
}

/** The bytes to append for a blob (its stored bytes) or a deletion of `hash`. */
export function encodeEntry(kind: typeof BLOB | typeof DELETION, hash: string, body: Uint8Array = EMPTY): Buffer {
  const entry = Buffer.allocUnsafe(ENTRY_HEADER_BYTES + body.length);
  encodeEntryInto(entry, 0, kind, hash, body);
  return entry;
}

/**
 * {@link encodeEntry} written into `target` at `at` (ENTRY_HEADER_BYTES + the body's length bytes): many entries
 * appended at once are encoded into one buffer, not one each (a cold scan of 50k files made 50k).
 */
export function encodeEntryInto(
  target: Buffer,
  at: number,
  kind: typeof BLOB | typeof DELETION,
  hash: string,
  body: Uint8Array = EMPTY,
): void {
  MAGIC.copy(target, at);
  target[at + 4] = kind;
  target.fill(0, at + 5, at + 8);
  target.writeUInt32BE(body.length, at + 8);
  target.write(hash, at + 12, 32, "hex");
  target.set(body, at + ENTRY_HEADER_BYTES);
  checkOf(target.subarray(at, at + 44)).copy(target, at + 44);
  checkOf(body).copy(target, at + 48);
}
const EMPTY = new Uint8Array(0);

function checkOf(bytes: Uint8Array): Buffer {
  return createHash("sha256").update(bytes).digest().subarray(0, 4);
}

/** What a scan of a segment's bytes found: its whole entries, and what follows the last of them. */
export interface SegmentScan {
  entries: PackEntry[];
  /** Where the whole entries end: the end of the bytes scanned, or where the first bad entry starts. */
  end: number;
  /**
   * What lies from `end` on: nothing; a torn tail (an entry cut short by a crash, or zeros a power loss left:
   * safe to cut); or damage (anything else: left alone, and no entry after it is read).
   */
  after: "nothing" | "torn" | "damaged";
}

/**
 * The entries of `bytes` (a segment's bytes from `base` on, which starts at an entry). A header that fails its
 * check ends the scan: torn when it is the zeros or the short tail a crash leaves, else damage. A body that fails
 * its check is kept as a damaged entry (its header frames it), unless it is the last thing in the file and all
 * zeros: a write whose body never reached the disk.
 */
export function scanSegment(bytes: Buffer, base: number): SegmentScan {
  const entries: PackEntry[] = [];
  let at = 0;
  while (at < bytes.length) {
    const rest = bytes.length - at;
    const stop = (after: SegmentScan["after"]): SegmentScan => ({ entries, end: base + at, after });
    if (rest < ENTRY_HEADER_BYTES) return stop(tornOrDamaged(bytes.subarray(at)));
    const head = bytes.subarray(at, at + ENTRY_HEADER_BYTES);
    const kind = head[4];
    const headerHolds =
      head.subarray(0, 4).equals(MAGIC) &&
      (kind === BLOB || kind === DELETION) &&
      checkOf(head.subarray(0, 44)).equals(head.subarray(44, 48));
    if (!headerHolds) return stop(tornOrDamaged(bytes.subarray(at)));
    const length = head.readUInt32BE(8);
    if (ENTRY_HEADER_BYTES + length > rest) return stop("torn"); // cut short by the end of the file
    const body = bytes.subarray(at + ENTRY_HEADER_BYTES, at + ENTRY_HEADER_BYTES + length);
    const damaged = !checkOf(body).equals(head.subarray(48, 52));
    if (damaged && ENTRY_HEADER_BYTES + length === rest && body.every((byte) => byte === 0)) return stop("torn");
    entries.push({
      kind: kind as PackEntry["kind"],
      hash: head.subarray(12, 44).toString("hex"),
      offset: base + at,
      length,
      damaged,
    });
    at += ENTRY_HEADER_BYTES + length;
  }
  return { entries, end: base + at, after: "nothing" };
}

/** A tail shorter than a header that starts as an entry does, or all zeros, is what a crash leaves. */
function tornOrDamaged(tail: Buffer): "torn" | "damaged" {
  if (tail.length < ENTRY_HEADER_BYTES && MAGIC.subarray(0, Math.min(4, tail.length)).equals(tail.subarray(0, 4)))
    return "torn";
  for (const byte of tail) if (byte !== 0) return "damaged";
  return "torn";
}

/**
 * Whether `entry` is a whole blob entry named `hash` whose header checks out (a reader's look before trusting an
 * offset it remembers: a compaction elsewhere, or a header altered since, sends it to look again).
 */
export function isBlobEntryOf(entry: Buffer, hash: string): boolean {
  return (
    entry.length >= ENTRY_HEADER_BYTES &&
    entry.subarray(0, 4).equals(MAGIC) &&
    entry[4] === BLOB &&
    entry.readUInt32BE(8) === entry.length - ENTRY_HEADER_BYTES &&
    entry.subarray(12, 44).toString("hex") === hash &&
    checkOf(entry.subarray(0, 44)).equals(entry.subarray(44, 48))
  );
}
