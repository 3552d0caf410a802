// A pack segment's bytes (src/backend/fs/pack-format.ts) against a model: the map of names to stored bytes that the
// appends made, in order. Appends are generated as the pack's callers make them (each name once an append):
// blobs stored raw, behind a loose header of each method (and a method no codec has), bodies of every size up to
// past a run member's 64 KiB, raw bytes that start as a loose header does, deletions of names written before. Then
// what a crash leaves of the last append (cut at any byte, or its unwritten pages zeros), and a byte flipped
// anywhere. Whatever the damage, a name the scan gives is never given with bytes the model does not hold for it.
import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  BLOB,
  DELETION,
  encodeEntriesSync,
  type Framed,
  type PackEntry,
  scanSegment,
  storedOf,
} from "../../src/backend/fs/pack-format.js";
import { rounds } from "../helpers/rounds.js";

const MAGIC = Buffer.from([0x00, 0x61, 0x74, 0x7a]);

/** Stored bytes in the shapes a pack is given. */
const storedArb: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.constantFrom(0, 1, 2, 7), fc.nat({ max: 2 ** 40 }), fc.nat(), fc.uint8Array({ maxLength: 200 }))
      .map(([method, length, dictionary, body]) => {
        const head = Buffer.alloc(method === 2 ? 15 : 11);
        MAGIC.copy(head);
        head[4] = method;
        head.writeUIntBE(length, 5, 6);
        if (method === 2) head.writeUInt32BE(dictionary >>> 0, 11);
        return Buffer.concat([head, body]);
      }),
  },
  // the start of a loose header and no more, and a body past what a run's member holds
  {
    weight: 1,
    arbitrary: fc.integer({ min: 0, max: 14 }).map((n) => Buffer.concat([MAGIC, Buffer.alloc(11)]).subarray(0, n)),
  },
  { weight: 1, arbitrary: fc.constant(null).map(() => randomBytes(70_000)) },
);

const hashArb = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("hex"));

/** Appends: each a list of new blobs, and deletions of names written by earlier appends. */
const appendsArb = fc.array(
  fc.record({
    blobs: fc.uniqueArray(fc.tuple(hashArb, storedArb), { maxLength: 12, selector: ([hash]) => hash }),
    deletions: fc.array(fc.nat(), { maxLength: 3 }),
    again: fc.array(fc.nat(), { maxLength: 2 }),
  }),
  { minLength: 1, maxLength: 6 },
);

type Model = Map<string, Buffer>;

type Appends = typeof appendsArb extends fc.Arbitrary<infer T> ? T : never;

/** The segment's bytes, the model after each append, and where each append starts. */
function build(appends: Appends) {
  const model: Model = new Map();
  const states: Model[] = [];
  const starts: number[] = [];
  const parts: Buffer[] = [];
  let length = 0;
  for (const { blobs, deletions, again } of appends) {
    const framed: Framed[] = [];
    const named = new Set(blobs.map(([hash]) => hash));
    const known = [...model.keys()].filter((hash) => !named.has(hash));
    // a name written before, written again with other bytes (the pack keeps the last), or deleted
    for (const i of again.slice(0, known.length)) {
      const hash = known[i % known.length]!;
      if (named.has(hash)) continue;
      named.add(hash);
      const stored = randomBytes(i % 50);
      framed.push({ kind: BLOB, hash, body: stored });
    }
    for (const i of deletions) {
      const left = known.filter((hash) => !named.has(hash));
      if (left.length === 0) break;
      const hash = left[i % left.length]!;
      named.add(hash);
      framed.push({ kind: DELETION, hash });
    }
    for (const [hash, stored] of blobs) framed.push({ kind: BLOB, hash, body: stored });
    for (const entry of framed)
      if (entry.kind === DELETION) model.delete(entry.hash);
      else model.set(entry.hash, Buffer.from(entry.body!));
    const { bytes } = encodeEntriesSync(framed);
    starts.push(length);
    parts.push(bytes);
    length += bytes.length;
    states.push(new Map(model));
  }
  return { bytes: Buffer.concat(parts), states, starts };
}

/** The scan's entries applied in order: each live name and its stored bytes as the segment holds them. */
function read(
  bytes: Buffer,
  entries: readonly PackEntry[],
): Map<string, { stored: Buffer | undefined; damaged: boolean }> {
  const live = new Map<string, { stored: Buffer | undefined; damaged: boolean }>();
  for (const entry of entries) {
    if (entry.kind === DELETION) {
      live.delete(entry.hash);
      continue;
    }
    const at = bytes.subarray(entry.offset, entry.offset + entry.head + entry.length);
    live.set(entry.hash, { stored: storedOf(Buffer.from(at), entry.hash, entry), damaged: entry.damaged });
  }
  return live;
}

describe("a pack segment's bytes, against the names and bytes its appends wrote", () => {
  it("reads back every live blob byte for byte, and each damaged, cut or zeroed tail as the model allows", () => {
    fc.assert(
      fc.property(appendsArb, fc.nat(), fc.nat(), fc.constantFrom("cut", "zeros", "flip"), (appends, p, q, harm) => {
        const { bytes, states, starts } = build(appends);
        const whole = scanSegment(bytes, 0);
        expect(whole.after).toBe("nothing");
        expect(whole.end).toBe(bytes.length);
        const live = read(bytes, whole.entries);
        const model = states.at(-1)!;
        expect([...live.keys()].sort()).toEqual([...model.keys()].sort());
        // (Buffers compared with equals: vitest's deep equality is slow on large ones)
        for (const [hash, stored] of model) {
          const got = live.get(hash);
          expect(got?.damaged === false && got.stored?.equals(stored), hash).toBe(true);
        }

        // What a crash leaves of the last append: cut anywhere in it, or its pages from one on left zeros.
        const last = starts.at(-1)!;
        const before = states.at(-2) ?? new Map<string, Buffer>();
        const span = bytes.length - last;
        let harmed: Buffer;
        if (harm === "flip") {
          harmed = Buffer.from(bytes);
          if (harmed.length > 0) harmed[p % harmed.length]! ^= 1 << (q % 8);
        } else if (harm === "cut") harmed = bytes.subarray(0, last + (span === 0 ? 0 : p % span));
        else {
          harmed = Buffer.from(bytes);
          const from = Math.max(last, Math.floor((last + (span === 0 ? 0 : p % span)) / 4096) * 4096);
          harmed.fill(0, from);
        }
        const scan = scanSegment(harmed, 0);
        const got = read(harmed, scan.entries);
        // Never a name with bytes the model does not hold for it: whole, or marked damaged (the reader's hash
        // check refuses those), or not given at all.
        for (const [hash, { stored, damaged }] of got) {
          if (damaged || stored === undefined) continue;
          const written = model.get(hash) ?? before.get(hash);
          const ever = states.some((state) => state.get(hash)?.equals(stored));
          expect(ever || written?.equals(stored) === true, hash).toBe(true);
        }
        if (harm !== "flip") {
          // All that came before the last append reads whole. A tail cut short is never taken for damage; zeros
          // from a page boundary inside an entry's own header may be (a new segment then, and nothing cut).
          if (harm === "cut") expect(scan.after).not.toBe("damaged");
          expect(scan.end).toBeGreaterThanOrEqual(last);
          const beforeLast = read(
            harmed,
            scan.entries.filter((entry) => entry.offset < last),
          );
          for (const [hash, stored] of before)
            if (!appends.at(-1)!.blobs.some(([h]) => h === hash))
              expect(beforeLast.get(hash)?.stored?.equals(stored), hash).toBe(true);
        }
      }),
      { numRuns: rounds(150, 3000) },
    );
  });
});
