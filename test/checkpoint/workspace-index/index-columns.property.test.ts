// The index's base by columns (src/checkpoint/workspace-index/index-columns.ts): whatever the rows (any name the file
// system allows, lone surrogates standing for bytes that are not UTF-8 among them; times and inode numbers anywhere
// in 64 bits, in any order; owners or none), the columns go through JSON and come back as the same rows, in order.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { columnsOf, rowsOf, type Row } from "../../../src/checkpoint/workspace-index/index-columns.js";
import { rounds } from "../../helpers/rounds.js";

const piece = fc.oneof(
  fc.constantFrom("src", "/", "a", "é", "😀", "\udcff", "\udc80", "\ud800", "\u0000", " ", ".."),
  fc.string({ maxLength: 4 }),
  fc.string({ unit: "binary", maxLength: 3 }),
);
const path = fc.array(piece, { maxLength: 10 }).map((parts) => parts.join(""));
const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String);
const row: fc.Arbitrary<Row> = fc
  .tuple(
    path,
    fc.constantFrom("f", "d", "l", "o"),
    fc.nat(),
    u64,
    u64,
    u64,
    fc.nat({ max: 0o177777 }),
    fc.option(fc.oneof(fc.stringMatching(/^[0-9a-f]{64}$/), path), { nil: null }),
    fc.nat({ max: 7 }),
    fc.option(fc.tuple(fc.nat(), fc.nat()), { nil: undefined }),
  )
  .map(([p, kind, size, m, c, ino, mode, value, flags, owner]) => {
    const r: Row = [p, kind as Row[1], size, m, c, ino, mode, value, flags];
    if (owner) r.push(owner[0], owner[1]);
    return r;
  });

describe("the index's base by columns", () => {
  it("gives back the same rows, in order, through JSON", () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 60 }), (rows) => {
        const stored = JSON.parse(JSON.stringify(columnsOf(rows)));
        expect(rowsOf(stored)).toEqual(rows);
      }),
      { numRuns: rounds(300, 3000) },
    );
  });

  it("refuses columns of unequal lengths or wrong kinds (the index is then lost, not misread)", () => {
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 10 }), fc.nat(), (rows, pick) => {
        const columns = columnsOf(rows) as unknown as Record<string, unknown[] | string>;
        const names = Object.keys(columns);
        const name = names[pick % names.length]!;
        const damaged = { ...columns, [name]: name === "kind" ? "x" : [...(columns[name] as unknown[]), 1] };
        expect(rowsOf(damaged)).toBeUndefined();
      }),
      { numRuns: rounds(100, 1000) },
    );
  });
});
