// How small blobs sit together in a pack segment (docs/format.md, "Blob packs"; docs/ARCHITECTURE.md, "Blobs").
import { createHash } from "node:crypto";
import { yieldIfLong } from "../../core/time-slices.js";
import { DEFLATE_RAW_DICTIONARY, type StoredParts, storedBytes, storedLength, storedParts } from "./blob-codec.js";

/**
 * A segment is a run of entries, each of one of three kinds.
 *
 * A blob or a deletion: a 52-byte header, then (a blob) its bytes as its loose file would hold them (blob-codec.ts).
 *
 *   0  "ATPB"          magic
 *   4  kind            1 = a blob, 2 = a deletion (no body)
 *   5  3 zero bytes
 *   8  body length     u32 big-endian (0 for a deletion)
 *  12  sha256          32 bytes: the blob's name, the hash of its original bytes
 *  44  header check    the first 4 bytes of sha256(bytes 0..43)
 *  48  body check      the first 4 bytes of sha256(body)
 *
 * A run of blobs written together (a scan's, a rewind's undo): a 28-byte header, then its members, each a 43-byte
 * row and a body. A member's row keeps what its blob's loose header says (blob-codec.ts), so its body is only what
 * follows that header: 43 bytes a blob where an entry of its own takes 52 and its body 11 to 15 more.
 *
 *   0  "ATPB"          magic
 *   4  kind            3 = a run
 *   5  3 zero bytes
 *   8  members' bytes  u32 big-endian: every member's row and body, after this header
 *  12  member count    u32 big-endian
 *  16  dictionary      u32 big-endian: the id of the dictionary its members of method 2 need (0 when none does)
 *  20  header check    the first 4 bytes of sha256(bytes 0..19)
 *  24  rows check      the first 4 bytes of sha256(every member's row, in order)
 *
 * A member:
 *
 *   0  sha256          32 bytes: the blob's name
 *  32  how             the loose header's method, or 255: the bytes as they are (a blob stored raw)
 *  33  length          u32 big-endian: the original length the loose header claims (the body's, for 255)
 *  37  body length     u16 big-endian
 *  39  body check      the first 4 bytes of sha256(body)
 *  43  body
 */
export const ENTRY_HEADER_BYTES = 52;
const RUN_HEADER_BYTES = 28;
const ROW_BYTES = 43;
const MAGIC = Buffer.from("ATPB", "latin1");
export const BLOB = 1;
export const DELETION = 2;
const RUN = 3;
/** A member's body length is a u16. */
const MAX_MEMBER_BODY = 0xffff;

export interface PackEntry {
  kind: typeof BLOB | typeof DELETION;
  hash: string;
  /** Where the entry (or, in a run, the member's row) starts in its segment. */
  offset: number;
  /** The body's length (the blob as stored: compressed where that paid; in a run, without its loose header). */
  length: number;
  /** The body fails its check: read back as it is, and the reader's hash check refuses it. */
  damaged: boolean;
  /** Bytes from `offset` to the body: an entry's header, or a member's row. */
  head: number;
  /** Bytes the entry takes in its segment: its header and body; a run's header is counted with its first member. */
  size: number;
  /** A run's member: what its loose header said, to give back the bytes its loose file would hold. */
  parts?: Omit<StoredParts, "body">;
}

/** An entry to append: its kind, its name and (a blob) its stored bytes, as its loose file would hold them. */
export interface Framed {
  kind: PackEntry["kind"];
  hash: string;
  body?: Uint8Array;
  /** A blob copied from a damaged entry (a compaction's): it stays damaged. */
  damaged?: boolean;
}

/**
 * The bytes to append for `framed` and the entries they hold (offsets from the first byte). Blobs that can be
 * members (a body under 64 KiB) are written as runs, one for each dictionary their bodies need (a run of one is
 * an entry of its own, which is smaller); the rest (deletions, larger bodies) as entries of their own, first. A
 * name comes once in one append (the callers' rule), so the order within it does not matter. Lets the event loop
 * turn while it encodes: two hashes an entry, and a rewind appends 1,000 undo blobs at once.
 */
export async function encodeEntries(framed: readonly Framed[]): Promise<Encoded> {
  const steps = encoding(framed);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await yieldIfLong();
  }
}

/** {@link encodeEntries} in one go, for a compaction or a fork's copy, which stay synchronous throughout. */
export function encodeEntriesSync(framed: readonly Framed[]): Encoded {
  const steps = encoding(framed);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

export type Encoded = { bytes: Buffer; entries: PackEntry[] };

/**
 * The encoding, pausing (a bare `yield`) after each entry. A damaged blob (`damaged`: its body failed its check
 * where it was) is written as an entry of its own whose body check fails again, so a compaction keeps it damaged:
 * a later write of the same blob replaces it, as before.
 */
function* encoding(framed: readonly Framed[]): Generator<void, Encoded> {
  const { alone, runs } = grouped(framed);
  let total = 0;
  for (const entry of alone) total += ENTRY_HEADER_BYTES + (entry.body?.length ?? 0);
  for (const members of runs.values()) {
    total += RUN_HEADER_BYTES;
    for (const { parts } of members) total += ROW_BYTES + parts.body.length;
  }
  const bytes = Buffer.allocUnsafe(total);
  const entries: PackEntry[] = [];
  let at = 0;
  for (const entry of alone) {
    const body = entry.body ?? EMPTY;
    encodeEntryInto(bytes, at, entry.kind, entry.hash, body);
    const damaged = entry.damaged === true;
    if (damaged) bytes.writeUInt32BE(bytes.readUInt32BE(at + 48) ^ 0xffffffff, at + 48);
    const size = ENTRY_HEADER_BYTES + body.length;
    const { kind, hash } = entry;
    entries.push({ kind, hash, offset: at, length: body.length, damaged, head: ENTRY_HEADER_BYTES, size });
    at += size;
    yield;
  }
  for (const [dictionary, members] of runs) at = yield* encodeRun(bytes, at, dictionary, members, entries);
  return { bytes, entries };
}

type Member = { hash: string; parts: StoredParts };

/**
 * Which blobs go as runs, by the dictionary a run's header names (those deflated against one, and the others with
 * the first of them), and which as entries of their own (deletions, damaged blobs, bodies past a member's 64 KiB,
 * and a run's only member: an entry of its own is smaller).
 */
function grouped(framed: readonly Framed[]): { alone: Framed[]; runs: Map<number, Member[]> } {
  const alone: Framed[] = [];
  const runs = new Map<number, Member[]>();
  const others: Member[] = [];
  for (const entry of framed) {
    const parts = entry.kind === BLOB && entry.body && !entry.damaged ? storedParts(entry.body) : undefined;
    if (parts === undefined || parts.body.length > MAX_MEMBER_BODY || parts.length > 0xffffffff) alone.push(entry);
    else if (parts.how !== DEFLATE_RAW_DICTIONARY) others.push({ hash: entry.hash, parts });
    else {
      const members = runs.get(parts.dictionary) ?? [];
      members.push({ hash: entry.hash, parts });
      runs.set(parts.dictionary, members);
    }
  }
  if (others.length > 0) {
    const [first] = runs.values();
    if (first) first.push(...others);
    else runs.set(0, others);
  }
  // A run pays its header once and saves 9 bytes a member and the member's own header (0 to 15 bytes): a few tiny raw
  // blobs take fewer bytes as entries of their own, and a compaction must never make what stays bigger.
  for (const [key, members] of runs) {
    let asRun = RUN_HEADER_BYTES;
    let asEntries = 0;
    for (const { parts } of members) {
      asRun += ROW_BYTES + parts.body.length;
      asEntries += ENTRY_HEADER_BYTES + storedLength(parts);
    }
    if (asRun < asEntries) continue;
    for (const { hash, parts } of members) alone.push({ kind: BLOB, hash, body: storedBytes(parts) });
    runs.delete(key);
  }
  return { alone, runs };
}

/** Writes a run of `members` into `bytes` at `at`, its entries into `entries`; returns where it ends. */
function* encodeRun(
  bytes: Buffer,
  at: number,
  dictionary: number,
  members: readonly Member[],
  entries: PackEntry[],
): Generator<void, number> {
  const start = at;
  const rows = createHash("sha256");
  at += RUN_HEADER_BYTES;
  for (const [i, { hash, parts }] of members.entries()) {
    const { how, length, body } = parts;
    bytes.write(hash, at, 32, "hex");
    bytes[at + 32] = how;
    bytes.writeUInt32BE(length, at + 33);
    bytes.writeUInt16BE(body.length, at + 37);
    checkOf(body).copy(bytes, at + 39);
    bytes.set(body, at + ROW_BYTES);
    rows.update(bytes.subarray(at, at + ROW_BYTES));
    const size = ROW_BYTES + body.length + (i === 0 ? RUN_HEADER_BYTES : 0);
    entries.push({
      ...{ kind: BLOB, hash, offset: at, length: body.length, damaged: false, head: ROW_BYTES, size },
      parts: { how, length, dictionary: how === DEFLATE_RAW_DICTIONARY ? dictionary : 0 },
    });
    at += ROW_BYTES + body.length;
    yield;
  }
  MAGIC.copy(bytes, start);
  bytes[start + 4] = RUN;
  bytes.fill(0, start + 5, start + 8);
  bytes.writeUInt32BE(at - start - RUN_HEADER_BYTES, start + 8);
  bytes.writeUInt32BE(members.length, start + 12);
  bytes.writeUInt32BE(dictionary, start + 16);
  checkOf(bytes.subarray(start, start + 20)).copy(bytes, start + 20);
  rows.digest().copy(bytes, start + 24, 0, 4);
  return at;
}

/** The bytes of one blob or deletion entry of its own (tests build torn and damaged tails with it). */
export function encodeEntry(kind: typeof BLOB | typeof DELETION, hash: string, body: Uint8Array = EMPTY): Buffer {
  const entry = Buffer.allocUnsafe(ENTRY_HEADER_BYTES + body.length);
  encodeEntryInto(entry, 0, kind, hash, body);
  return entry;
}

function encodeEntryInto(
  target: Buffer,
  at: number,
  kind: typeof BLOB | typeof DELETION,
  hash: string,
  body: Uint8Array,
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
 * zeros: a write whose body never reached the disk. A run that fails a check is torn when it is the last thing in the
 * file and holds the zeros of pages a power loss never wrote, else damage.
 */
export function scanSegment(bytes: Buffer, base: number): SegmentScan {
  const entries: PackEntry[] = [];
  let at = 0;
  while (at < bytes.length) {
    const rest = bytes.length - at;
    const stop = (after: SegmentScan["after"]): SegmentScan => ({ entries, end: base + at, after });
    if (rest >= 5 && bytes[at + 4] === RUN && bytes.subarray(at, at + 4).equals(MAGIC)) {
      const run = scanRun(bytes, at, base);
      if (typeof run === "string") return stop(run);
      entries.push(...run.entries);
      at = run.end;
      continue;
    }
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
    const size = ENTRY_HEADER_BYTES + length;
    entries.push({
      kind: kind as PackEntry["kind"],
      hash: head.subarray(12, 44).toString("hex"),
      ...{ offset: base + at, length, damaged, head: ENTRY_HEADER_BYTES, size },
    });
    at += size;
  }
  return { entries, end: base + at, after: "nothing" };
}

/** The members of the run at `at`, and where it ends; or what stops the scan there. */
function scanRun(bytes: Buffer, at: number, base: number): { entries: PackEntry[]; end: number } | "torn" | "damaged" {
  const rest = bytes.length - at;
  if (rest < RUN_HEADER_BYTES) return tornOrDamaged(bytes.subarray(at));
  const head = bytes.subarray(at, at + RUN_HEADER_BYTES);
  if (!checkOf(head.subarray(0, 20)).equals(head.subarray(20, 24))) return tornOrDamaged(bytes.subarray(at));
  const membersBytes = head.readUInt32BE(8);
  const count = head.readUInt32BE(12);
  const dictionary = head.readUInt32BE(16);
  const end = at + RUN_HEADER_BYTES + membersBytes;
  if (end > bytes.length) return "torn"; // cut short by the end of the file
  const rows = createHash("sha256");
  const entries: PackEntry[] = [];
  let m = at + RUN_HEADER_BYTES;
  for (let i = 0; i < count && m + ROW_BYTES <= end; i++) {
    const row = bytes.subarray(m, m + ROW_BYTES);
    rows.update(row);
    const length = row.readUInt16BE(37);
    if (m + ROW_BYTES + length > end) break;
    const body = bytes.subarray(m + ROW_BYTES, m + ROW_BYTES + length);
    const how = row[32]!;
    entries.push({
      kind: BLOB,
      hash: row.subarray(0, 32).toString("hex"),
      ...{ offset: base + m, length, damaged: !checkOf(body).equals(row.subarray(39, 43)), head: ROW_BYTES },
      size: ROW_BYTES + length + (i === 0 ? RUN_HEADER_BYTES : 0),
      parts: { how, length: row.readUInt32BE(33), dictionary: how === DEFLATE_RAW_DICTIONARY ? dictionary : 0 },
    });
    m += ROW_BYTES + length;
  }
  const rowsHold = entries.length === count && m === end && rows.digest().subarray(0, 4).equals(head.subarray(24, 28));
  const damaged = entries.some((entry) => entry.damaged);
  // A run that fails a check and ends the file, holding the zeros of pages a power loss never wrote: a write a crash
  // cut short, never acknowledged. Any other failure is damage: its rows hold (a body damaged is kept, framed, as an
  // entry's is), or not (nothing from it on is read).
  if ((!rowsHold || damaged) && end === bytes.length && unwrittenPages(bytes, at + RUN_HEADER_BYTES, base))
    return "torn";
  return rowsHold ? { entries, end } : "damaged";
}

/**
 * Whether the bytes from `from` to the end hold what unwritten pages leave: 512 zeros in a row, or 64 or more zeros
 * from the last page boundary (of the file: `base` is where `bytes` start in it) to the end.
 */
function unwrittenPages(bytes: Buffer, from: number, base: number): boolean {
  const lastPage = Math.max(from, Math.floor((base + bytes.length - 1) / 4096) * 4096 - base);
  // A few zeros at the end may be a body's own: under 64, the run is taken for damaged (a new segment, nothing cut).
  const tail = bytes.subarray(lastPage);
  return zeroBlock(bytes.subarray(from)) || (tail.length >= 64 && tail.every((byte) => byte === 0));
}

/** Whether `bytes` hold a 512-byte stretch of zeros: what a power loss leaves of a write's unwritten pages. */
function zeroBlock(bytes: Buffer): boolean {
  let run = 0;
  for (const byte of bytes) {
    run = byte === 0 ? run + 1 : 0;
    if (run >= 512) return true;
  }
  return false;
}

/** A tail shorter than a header that starts as an entry does, or all zeros, is what a crash leaves. */
function tornOrDamaged(tail: Buffer): "torn" | "damaged" {
  if (tail.length < ENTRY_HEADER_BYTES && MAGIC.subarray(0, Math.min(4, tail.length)).equals(tail.subarray(0, 4)))
    return "torn";
  for (const byte of tail) if (byte !== 0) return "damaged";
  return "torn";
}

/**
 * The stored bytes (as the blob's loose file would hold them) of `entry`, the bytes read at a place the index
 * remembers for `hash` (`head` and `length` bytes), when they are still that blob's entry or member whose header
 * (or row) checks out; else undefined: a compaction elsewhere, or a header altered since, sends the reader to look
 * again.
 */
export function storedOf(
  entry: Buffer,
  hash: string,
  where: Pick<PackEntry, "head" | "length" | "parts">,
): Buffer | undefined {
  if (entry.length !== where.head + where.length) return undefined;
  if (where.parts === undefined) return isBlobEntryOf(entry, hash) ? entry.subarray(ENTRY_HEADER_BYTES) : undefined;
  const holds =
    where.head === ROW_BYTES &&
    entry.subarray(0, 32).toString("hex") === hash &&
    entry[32] === where.parts.how &&
    entry.readUInt32BE(33) === where.parts.length &&
    entry.readUInt16BE(37) === where.length;
  return holds ? storedBytes({ ...where.parts, body: entry.subarray(ROW_BYTES) }) : undefined;
}

/**
 * Whether `entry` is a whole blob entry named `hash` whose header checks out (a reader's look before trusting an
 * offset it remembers: a compaction elsewhere, or a header altered since, sends it to look again).
 */
function isBlobEntryOf(entry: Buffer, hash: string): boolean {
  return (
    entry.length >= ENTRY_HEADER_BYTES &&
    entry.subarray(0, 4).equals(MAGIC) &&
    entry[4] === BLOB &&
    entry.readUInt32BE(8) === entry.length - ENTRY_HEADER_BYTES &&
    entry.subarray(12, 44).toString("hex") === hash &&
    checkOf(entry.subarray(0, 44)).equals(entry.subarray(44, 48))
  );
}
