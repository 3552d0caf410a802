// Blob writes and deletes on the fs backend against a model, the map of names to bytes they leave: blobs small
// (packed) and large (a file each), written one by one or as a scan's run, deleted one by one or many at once
// (`deleteBlobs`, with names given twice, never stored, or no hash at all), in any order, written again after
// their deletion. After each sequence every name ever written reads back as the model says, and lists as it says,
// in this process and in one that opens the store afresh (the pack's deletions read from disk).
import { createHash, randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/index.js";
import type { LockedSession } from "../../src/backend/types.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { rounds } from "../helpers/rounds.js";

interface Blob {
  hash: string;
  bytes: Buffer;
}

/** A pool of blobs the steps pick from: small ones of text, incompressible ones under and over the pack's size. */
const poolArb = fc
  .array(fc.oneof(fc.string({ maxLength: 200 }), fc.integer({ min: 3000, max: 3500 }), fc.constant(6000)), {
    minLength: 4,
    maxLength: 40,
  })
  .map((shapes) =>
    shapes.map((shape): Blob => {
      const bytes = typeof shape === "string" ? Buffer.from(`${shape}\n`) : randomBytes(shape);
      return { hash: createHash("sha256").update(bytes).digest("hex"), bytes };
    }),
  );

type Step =
  | { kind: "write"; picks: number[] }
  | { kind: "scan"; picks: number[] }
  | { kind: "delete"; picks: number[]; strangers: number }
  | { kind: "deleteOne"; pick: number };

const picksArb = fc.array(fc.nat(), { minLength: 1, maxLength: 30 });
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  picksArb.map((picks) => ({ kind: "write" as const, picks })),
  picksArb.map((picks) => ({ kind: "scan" as const, picks })),
  fc.tuple(picksArb, fc.nat({ max: 3 })).map(([picks, strangers]) => ({ kind: "delete" as const, picks, strangers })),
  fc.nat().map((pick) => ({ kind: "deleteOne" as const, pick })),
);

async function run(locked: LockedSession, pool: Blob[], step: Step, model: Map<string, Buffer>): Promise<void> {
  const picked = (picks: number[]) => picks.map((i) => pool[i % pool.length]!);
  if (step.kind === "write") {
    for (const { hash, bytes } of picked(step.picks)) await locked.writeBlob(hash, bytes);
  } else if (step.kind === "scan") {
    const blobs = picked(step.picks);
    await locked.writeScanBlobs!(blobs.map(({ hash, bytes }) => [hash, bytes] as const));
    await locked.syncBlobs!(blobs.map(({ hash }) => hash));
  } else if (step.kind === "delete") {
    const strangers = Array.from({ length: step.strangers }, (_, i) => (i % 2 ? "ef".repeat(32) : `not a hash ${i}`));
    const named = picked(step.picks).map(({ hash }) => hash);
    await locked.deleteBlobs!([...named, ...strangers, ...named.slice(0, 2)]);
    for (const hash of named) model.delete(hash);
    return;
  } else {
    const { hash } = pool[step.pick % pool.length]!;
    await locked.deleteBlob(hash);
    model.delete(hash);
    return;
  }
  for (const { hash, bytes } of picked(step.picks)) model.set(hash, bytes);
}

describe("fs blob writes and deletes against a model", () => {
  it("every name reads and lists as the model says, now and in a store opened afresh", async () => {
    await fc.assert(
      fc.asyncProperty(poolArb, fc.array(stepArb, { minLength: 1, maxLength: 12 }), async (pool, steps) => {
        const root = await tempDir("agent-tape-delete-model-");
        const store = openStore({ backend: fsBackend({ root, packBlobsUnder: 4096 }) });
        const { id } = await store.create();
        const model = new Map<string, Buffer>();
        await lockedAccess(store).withLockedSession(id, async (locked) => {
          for (const step of steps) await run(locked, pool, step, model);
        });
        const expectModel = async (backend: typeof store.backend) => {
          for (const { hash } of pool) expect(await backend.readBlob(id, hash)).toEqual(model.get(hash));
          expect((await backend.listBlobs(id)).sort()).toEqual([...model.keys()].sort());
        };
        await expectModel(store.backend);
        await store.close();
        const again = openStore({ backend: fsBackend({ root, packBlobsUnder: 4096 }) });
        try {
          await expectModel(again.backend);
        } finally {
          await again.close();
        }
      }),
      { numRuns: rounds(25, 200) },
    );
    // 200 runs in the soak run took 26-28 s in CI and once went past the default 30 s: each step's writes wait for the
    // disk. A limit with room, as the other property tests at soak counts have.
  }, 120_000);
});
