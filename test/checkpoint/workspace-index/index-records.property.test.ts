import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../../src/backend/index.js";
import type { IndexEntry, WorkspaceIndex } from "../../../src/checkpoint/workspace-index/index-entry.js";
import { indexRecords, loadIndex, writeIndexRecords } from "../../../src/checkpoint/workspace-index/index-record.js";
import { newId } from "../../../src/core/ids.js";
import { tempDir } from "../../helpers/fixture.js";
import { rounds } from "../../helpers/rounds.js";

// The index a scan records is the index the next process reads: any names (lone surrogates, the bytes of no
// encoding), any 64-bit stats, every kind, a base and then deltas, each record plain or deflated by its size.
const RUNS = rounds(40, 400);

const name = fc.string({ unit: "binary", minLength: 1, maxLength: 60 });
const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const owner = fc.option(fc.tuple(fc.nat(), fc.nat()), { nil: undefined });
const racy = fc.option(fc.constant(true as const), { nil: undefined });
const hash = fc.stringMatching(/^[0-9a-f]{64}$/);

const entry: fc.Arbitrary<IndexEntry> = fc
  .record({
    kind: fc.constantFrom("file", "directory", "symlink", "other"),
    size: fc.nat(),
    mtimeNs: u64,
    ctimeNs: u64,
    ino: u64,
    mode: fc.integer({ min: 0, max: 0o7777 }),
    owner,
    racy,
    hash: fc.option(hash, { nil: undefined }),
    skipped: fc.option(fc.constantFrom("too_large", "unreadable"), { nil: undefined }),
    target: fc.option(name, { nil: undefined }),
  })
  .map(({ kind, owner: ids, hash: h, skipped, target, racy: r, ...stat }) => {
    const made: IndexEntry = { kind, ...stat };
    if (ids) Object.assign(made, { uid: ids[0], gid: ids[1] });
    if (r) made.racy = true;
    // What a scan records: a file's hash or why it has none, a link's target; folders and others neither.
    if (kind === "file" && skipped) made.skipped = skipped;
    else if (kind === "file" && h) made.hash = h;
    if (kind === "symlink" && target !== undefined) made.target = target;
    return made;
  });

// Sized so that a base, and some deltas, pass the 4 KB from which a record is deflated (about 150 bytes a path).
const entries = (size: fc.SizeForArbitrary) =>
  fc.uniqueArray(fc.tuple(name, entry), { selector: ([path]) => path, maxLength: 120, size });
const delta = fc.record({ set: entries("medium"), removeSome: fc.array(fc.nat(), { maxLength: 20 }) });

describe("the workspace index's records", () => {
  it("read back as written: a base and its deltas, any names and stats, plain or deflated", async () => {
    const root = await tempDir("agent-tape-index-property-");
    const backend = fsBackend({ root });
    let deflated = 0;
    try {
      await fc.assert(
        fc.asyncProperty(entries("large"), fc.array(delta, { maxLength: 6 }), async (first, deltas) => {
          const id = newId();
          await backend.createSession({ id, createdAt: new Date().toISOString(), workspace: root });
          const locked = await backend.lock(id);
          try {
            const index: WorkspaceIndex = { workspace: root, generation: 0, entries: new Map(first) };
            const written = await indexRecords(index, { set: [], removed: [], whole: true });
            deflated += written.write.filter((r) => (r.value as { v?: number }).v === 2).length;
            await writeIndexRecords(locked, written);
            for (const { set, removeSome } of deltas) {
              const paths = [...index.entries.keys()];
              const removed = [...new Set(removeSome.map((n) => paths[n % Math.max(1, paths.length)]))].filter(
                (path): path is string => path !== undefined && !set.some(([p]) => p === path),
              );
              for (const path of removed) index.entries.delete(path);
              for (const [path, e] of set) index.entries.set(path, e);
              const records = await indexRecords(index, { set: set.map(([p]) => p), removed, whole: false });
              deflated += records.write.filter((r) => (r.value as { v?: number }).v === 2).length;
              await writeIndexRecords(locked, records);
            }
            const read = await loadIndex(backend, id);
            expect(read?.generation).toBe(index.generation);
            expect(read?.workspace).toBe(root);
            expect(new Map(read?.entries)).toEqual(index.entries);
          } finally {
            await locked.release();
          }
        }),
        { numRuns: RUNS },
      );
    } finally {
      await backend.close();
    }
    console.log(`${RUNS} runs, ${deflated} records deflated`);
    expect(deflated).toBeGreaterThan(0);
  }, 120_000);
});
