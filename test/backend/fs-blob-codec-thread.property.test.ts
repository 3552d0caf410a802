// The small blobs of a scan's batch are deflated on a helper thread (src/backend/fs/blob-codec.ts,
// encodeBlobsOffThread; a rewind's undo copy, half there and half on this thread): what is stored must be byte for
// byte what the same blobs stored one by one on this thread give, whatever the bytes (empty, around the size
// compression starts at, incompressible, compressible, and raw bytes that begin like a compressed blob's marker),
// and every stored form must decode to its blob.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeBlob, encodeBlobSync, encodeBlobsOffThread } from "../../src/backend/fs/blob-codec.js";
import { rounds } from "../helpers/rounds.js";

const MARKER = [0x00, 0x61, 0x74, 0x7a];

const blobBytes = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  fc.uint8Array({ minLength: 120, maxLength: 140 }),
  fc.string({ maxLength: 3000 }).map((text) => new TextEncoder().encode(text.repeat(3))),
  // Source-like text: long and redundant, where deflate's level shows in its output.
  fc
    .array(fc.constantFrom("export", "const", "value", "=", ";\n", "function", "(", ")", "return", "total", "1"), {
      minLength: 100,
      maxLength: 1500,
    })
    .map((words) => new TextEncoder().encode(words.join(" "))),
  fc.uint8Array({ maxLength: 200 }).map((rest) => Uint8Array.from([...MARKER, ...rest])),
  fc.uint8Array({ maxLength: 8 }).map((rest) => Uint8Array.from([...MARKER, 1, ...rest])),
  // Raw bytes that look like an entry deflated against a dictionary (method 2, an id, a body).
  fc
    .uint8Array({ maxLength: 40 })
    .map((rest) => Uint8Array.from([...MARKER, 2, 0, 0, 0, 0, 0, 9, 1, 2, 3, 4, ...rest])),
);

/** A pack's dictionary: any bytes up to 16 KiB, named by an id as pack-dictionary.ts names one. */
const dictionaryOf = fc
  .tuple(fc.array(blobBytes, { minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: 0xffffffff }))
  .map(([parts, id]) => ({ id, bytes: Buffer.concat(parts.map((part) => Buffer.from(part))).subarray(0, 16 * 1024) }));

describe("deflating a batch of blobs on the helper thread", () => {
  it("stores each blob byte for byte as encodeBlobSync does, and each decodes back", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(blobBytes, { minLength: 1, maxLength: 80 }),
        fc.boolean(),
        async (blobs, callerWaits) => {
          // callerWaits: this thread deflates the second half meanwhile; the bytes must not depend on who did.
          const offThread = await encodeBlobsOffThread(blobs, undefined, { callerWaits });
          expect(offThread.map((stored) => Buffer.from(stored))).toEqual(
            blobs.map((bytes) => Buffer.from(encodeBlobSync(bytes))),
          );
          for (const [i, stored] of offThread.entries())
            expect(await decodeBlob(Buffer.from(stored))).toEqual(Buffer.from(blobs[i]!));
        },
      ),
      { numRuns: rounds(40, 300) },
    );
  });

  it("against a dictionary: the same bytes as on this thread; decoded only with that dictionary", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(blobBytes, { minLength: 1, maxLength: 40 }),
        dictionaryOf,
        dictionaryOf,
        fc.boolean(),
        async (blobs, dictionary, other, callerWaits) => {
          const offThread = await encodeBlobsOffThread(blobs, dictionary, { callerWaits });
          expect(offThread.map((stored) => Buffer.from(stored))).toEqual(
            blobs.map((bytes) => Buffer.from(encodeBlobSync(bytes, dictionary))),
          );
          const withIt = (id: number) => (id === dictionary.id ? dictionary.bytes : undefined);
          const withOther = () => other.bytes;
          for (const [i, stored] of offThread.entries()) {
            const blob = Buffer.from(blobs[i]!);
            expect(await decodeBlob(Buffer.from(stored), undefined, withIt)).toEqual(blob);
            // Without it, or with another: never an error; what comes back is the blob only where the dictionary
            // was not used (or gave the same), else bytes the caller's hash check refuses.
            const without = await decodeBlob(Buffer.from(stored), undefined, () => undefined);
            const wrong = await decodeBlob(Buffer.from(stored), undefined, withOther);
            const againstIt = MARKER.every((byte, at) => stored[at] === byte) && stored[4] === 2;
            if (!againstIt) expect(without).toEqual(blob);
            else expect(without.equals(blob)).toBe(false);
            expect(wrong.length).toBeLessThanOrEqual(Math.max(blob.length, stored.length));
          }
        },
      ),
      { numRuns: rounds(40, 300) },
    );
  });
});
