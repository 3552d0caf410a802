// The small blobs of a scan's batch are deflated on a helper thread (src/backend/fs/blob-codec.ts,
// encodeBlobsOffThread): what is stored must be byte for byte what the same blobs stored one by one on this thread
// give, whatever the bytes (empty, around the size compression starts at, incompressible, compressible, and raw
// bytes that begin like a compressed blob's marker), and every stored form must decode to its blob.
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
);

describe("deflating a batch of blobs on the helper thread", () => {
  it("stores each blob byte for byte as encodeBlobSync does, and each decodes back", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(blobBytes, { minLength: 1, maxLength: 80 }), async (blobs) => {
        const offThread = await encodeBlobsOffThread(blobs);
        expect(offThread.map((stored) => Buffer.from(stored))).toEqual(
          blobs.map((bytes) => Buffer.from(encodeBlobSync(bytes))),
        );
        for (const [i, stored] of offThread.entries())
          expect(await decodeBlob(Buffer.from(stored))).toEqual(Buffer.from(blobs[i]!));
      }),
      { numRuns: rounds(40, 300) },
    );
  });
});
