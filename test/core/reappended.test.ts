// The events an undo put back, read from either form its marker can have: runs (`reappendedRanges`) or, as
// versions before them wrote it, every former sequence (`reappendedFrom`).
import { describe, expect, it } from "vitest";
import { RewindPayload, reappendedCount, reappendedRuns, reappendedSequences } from "../../src/index.js";

const base: RewindPayload = {
  targetSequence: 3,
  mode: "conversation",
  filesRestored: 0,
  filesDeleted: 0,
  skipped: [],
  changes: [],
  eventsRemoved: 0,
  blobsPruned: 0,
};

const runs: RewindPayload = {
  ...base,
  undoOf: 14,
  reappendedRanges: [
    [4, 5],
    [11, 13],
  ],
};
const list: RewindPayload = { ...base, undoOf: 14, reappendedFrom: [4, 5, 11, 12, 13] };

describe("reappendedCount, reappendedRuns, reappendedSequences", () => {
  it("read the runs a marker records, and the list an older marker records, the same way", () => {
    for (const payload of [runs, list]) {
      expect(RewindPayload.safeParse(payload).success).toBe(true);
      expect(reappendedCount(payload)).toBe(5);
      expect(reappendedRuns(payload)).toEqual([
        [4, 5],
        [11, 13],
      ]);
      expect([...reappendedSequences(payload)]).toEqual([4, 5, 11, 12, 13]);
    }
  });

  it("a list not in order is gathered exactly, run by run as listed", () => {
    const odd = { ...list, reappendedFrom: [7, 8, 2, 3, 3] };
    expect(reappendedRuns(odd)).toEqual([
      [7, 8],
      [2, 3],
      [3, 3],
    ]);
    expect([...reappendedSequences(odd)]).toEqual([7, 8, 2, 3, 3]);
    expect(reappendedCount(odd)).toBe(5);
  });

  it("a rewind marker, an undo with no events, and a field that is not a list: none", () => {
    expect(reappendedCount({ ...base, eventsRemoved: 4 })).toBe(0);
    expect(reappendedRuns({ ...base, undoOf: 4, reappendedRanges: [] })).toEqual([]);
    const garbled = { ...base, undoOf: 4, reappendedRanges: "4-5", reappendedFrom: 7 } as unknown as RewindPayload;
    expect(reappendedCount(garbled)).toBe(0);
    expect(reappendedRuns(garbled)).toEqual([]);
    expect([...reappendedSequences(garbled)]).toEqual([]);
  });

  it("a million events back are one run of two numbers", () => {
    const big: RewindPayload = { ...base, undoOf: 1_000_001, targetSequence: 1, reappendedRanges: [[2, 1_000_000]] };
    expect(reappendedCount(big)).toBe(999_999);
    expect(JSON.stringify(big.reappendedRanges)).toBe("[[2,1000000]]");
  });
});
