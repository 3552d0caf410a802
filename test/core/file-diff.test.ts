// The bounded file diff (docs/ARCHITECTURE.md, "Diffs"): lines within the bounds, bytes past them.
import { describe, expect, it } from "vitest";
import { DIFF_LIMITS, diffBudget, diffFile, looksBinary, totalDiffs } from "../../src/core/file-diff.js";

const text = (s: string) => Buffer.from(s);
const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} ${i}\n`).join("");

describe("diffFile", () => {
  it("counts a file without a final newline like any other line", () => {
    expect(diffFile("a", text("x\ny"), text("x\nz")).diff).toEqual({ unit: "lines", insertions: 1, deletions: 1 });
  });

  it("an absent side is an empty file with /dev/null in the patch header", () => {
    const made = diffFile("new.txt", undefined, text("a\nb\n"), { patch: true });
    expect(made).toEqual({
      diff: { unit: "lines", insertions: 2, deletions: 0 },
      patch: "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n",
    });
  });

  it("two unrelated texts whose diff would pass maxEditLength are counted in bytes, not searched", () => {
    const a = text(lines(DIFF_LIMITS.maxEditLength, "old"));
    const b = text(lines(DIFF_LIMITS.maxEditLength, "new"));
    expect(diffFile("f", a, b, { patch: true })).toEqual({
      diff: { unit: "bytes", insertions: b.length, deletions: a.length, reason: "too_many_changes" },
    });
  });

  it("a side whose size is given but whose bytes were not read is counted in bytes", () => {
    expect(diffFile("f", undefined, text("a\n"), { sizes: { before: 10 } }).diff).toEqual({
      unit: "bytes",
      insertions: 2,
      deletions: 10,
      reason: "too_large",
    });
  });

  it("a file counted in bytes whose sides are the same counts nothing in or out", () => {
    const png = Buffer.from([0x89, 0x50, 0, 1]);
    expect(diffFile("a.png", png, Buffer.from(png)).diff).toEqual({
      unit: "bytes",
      insertions: 0,
      deletions: 0,
      reason: "binary",
    });
    // Sides not read, known to be the same (one hash): the same.
    const sizes = { before: 10, after: 10 };
    expect(diffFile("f", undefined, undefined, { sizes, identical: true }).diff).toMatchObject({ insertions: 0 });
    expect(diffFile("f", undefined, undefined, { sizes }).diff).toMatchObject({ insertions: 10, deletions: 10 });
  });

  it("binary: a NUL in the first 8000 bytes, as git decides", () => {
    expect(looksBinary(Buffer.concat([Buffer.alloc(7999, 0x61), Buffer.from([0])]))).toBe(true);
    expect(looksBinary(Buffer.concat([Buffer.alloc(8000, 0x61), Buffer.from([0])]))).toBe(false);
  });

  it("totals keep lines and bytes apart", () => {
    expect(
      totalDiffs([
        { unit: "lines", insertions: 1, deletions: 2 },
        undefined,
        { unit: "bytes", insertions: 10, deletions: 20, reason: "binary" },
        { unit: "lines", insertions: 3, deletions: 0 },
      ]),
    ).toEqual({ lines: { insertions: 4, deletions: 2 }, bytes: { insertions: 10, deletions: 20 } });
  });
});

describe("a diff budget", () => {
  it("line-diffs files until maxTotalBytes is spent, then counts the rest in bytes", () => {
    const limits = { ...DIFF_LIMITS, maxTotalBytes: 10 };
    const budget = diffBudget(limits);
    expect(diffFile("a", text("1\n2\n"), text("1\n3\n"), { limits, budget }).diff.unit).toBe("lines"); // 8 bytes
    expect(diffFile("b", text("x\n"), text("y\n"), { limits, budget }).diff).toEqual({
      unit: "bytes",
      insertions: 2,
      deletions: 2,
      reason: "over_budget",
    });
    expect(budget.bytesLeft).toBe(2);
  });
});
