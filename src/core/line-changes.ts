/**
 * How many lines a line diff of two texts inserts and deletes, without the diff itself: what a report
 * counts when it shows no patch (docs/ARCHITECTURE.md, "Diffs"). The search is jsdiff's (`diffLines`, then
 * its Myers search with the same diagonal bounds and the same `maxEditLength`), so the counts are the ones
 * its patch would show; only the bookkeeping differs: lines are numbered once and each diagonal keeps one
 * integer, where jsdiff builds an object per step and joins the lines back into strings. That made counting
 * one rewound file, with the JIT cold as it is in a process that rewinds now and then, cost more than the
 * rest of the rewind (bench "rewind a 1-file shell command @10k vs its durable steps alone").
 */
export interface LineChanges {
  insertions: number;
  deletions: number;
}

/** The counts, or undefined when more than `maxEditLength` lines change (jsdiff gives up there too). */
export function countLineChanges(oldText: string, newText: string, maxEditLength: number): LineChanges | undefined {
  const { start, oldEnd, newEnd } = sharedEnds(oldText, newText);
  const ids = new Map<string, number>();
  const oldLines = lineIds(oldText, start, oldEnd, ids);
  const newLines = lineIds(newText, start, newEnd, ids);
  const edits = editLength(oldLines, newLines, Math.min(maxEditLength, oldLines.length + newLines.length));
  if (edits === undefined) return undefined;
  // Each edit inserts or deletes one line; the lines kept are kept on both sides.
  const grown = newLines.length - oldLines.length;
  return { insertions: (edits + grown) / 2, deletions: (edits - grown) / 2 };
}

/**
 * Where the lines both texts begin with end (`start`, the same in both) and where the lines both end with begin
 * (`oldEnd`, `newEnd`), each at the start of a line. A shortest edit keeps those lines (a longest common
 * subsequence can always take a shared first or last token), so its length is that of the lines between: an
 * edit that appends one line to a 40-line file numbers one line, not 80, and a 1,000-file rewind counted its
 * changes in 30-50 ms (docs/ARCHITECTURE.md, "Diffs").
 */
function sharedEnds(oldText: string, newText: string): { start: number; oldEnd: number; newEnd: number } {
  const limit = Math.min(oldText.length, newText.length);
  let same = 0;
  while (same < limit && oldText.charCodeAt(same) === newText.charCodeAt(same)) same++;
  if (same === oldText.length && same === newText.length) return { start: same, oldEnd: same, newEnd: same };
  // Back to the start of the line the texts part in: every line before it ends with "\n" in both.
  const start = same === 0 ? 0 : oldText.lastIndexOf("\n", same - 1) + 1;
  let oldEnd = oldText.length;
  let newEnd = newText.length;
  while (oldEnd > start && newEnd > start && oldText.charCodeAt(oldEnd - 1) === newText.charCodeAt(newEnd - 1)) {
    oldEnd--;
    newEnd--;
  }
  // On to the first place inside the shared end that starts a line in both texts (the texts' ends, at worst).
  const lineStarts = (text: string, at: number) => at === start || text.charCodeAt(at - 1) === 10;
  const shift = newEnd - oldEnd;
  while (oldEnd < oldText.length && !(lineStarts(oldText, oldEnd) && lineStarts(newText, oldEnd + shift))) oldEnd++;
  return { start, oldEnd, newEnd: oldEnd + shift };
}

/** jsdiff's line tokens of `text` from `from` to `to` (each line with its `\n` or `\r\n`; the last may have none). */
function lineIds(text: string, from: number, to: number, ids: Map<string, number>): Int32Array {
  const lines: number[] = [];
  for (let start = from; start < to; ) {
    const newline = text.indexOf("\n", start);
    const end = newline === -1 || newline >= to ? to : newline + 1;
    const line = text.slice(start, end);
    let id = ids.get(line);
    if (id === undefined) ids.set(line, (id = ids.size));
    lines.push(id);
    start = end;
  }
  return Int32Array.from(lines);
}

const NONE = -2; // no path on this diagonal (a real one has oldPos >= -1)

/**
 * The shortest edit's length (insertions + deletions), found as jsdiff's `Diff.diffWithOptionsObj` finds
 * it: per edit length, every diagonal in the bounds, extended along equal lines; undefined past `max`.
 */
function editLength(oldLines: Int32Array, newLines: Int32Array, max: number): number | undefined {
  const oldLen = oldLines.length;
  const newLen = newLines.length;
  const common = (oldPos: number, diagonal: number): number => {
    let newPos = oldPos - diagonal;
    while (newPos + 1 < newLen && oldPos + 1 < oldLen && oldLines[oldPos + 1] === newLines[newPos + 1]) {
      newPos++;
      oldPos++;
    }
    return oldPos;
  };
  const start = common(-1, 0);
  if (start + 1 >= oldLen && start + 1 >= newLen) return 0;
  // best[offset + diagonal]: how far along the old text the furthest path on that diagonal reached.
  const offset = max + 1;
  const best = new Int32Array(2 * max + 3).fill(NONE);
  best[offset] = start;
  let minDiagonal = Number.NEGATIVE_INFINITY;
  let maxDiagonal = Number.POSITIVE_INFINITY;
  for (let edits = 1; edits <= max; edits++) {
    for (let d = Math.max(minDiagonal, -edits); d <= Math.min(maxDiagonal, edits); d += 2) {
      const removeFrom = best[offset + d - 1]!;
      const addFrom = best[offset + d + 1]!;
      if (removeFrom !== NONE) best[offset + d - 1] = NONE;
      const canAdd = addFrom !== NONE && addFrom - d >= 0 && addFrom - d < newLen;
      const canRemove = removeFrom !== NONE && removeFrom + 1 < oldLen;
      if (!canAdd && !canRemove) {
        best[offset + d] = NONE;
        continue;
      }
      const from = !canRemove || (canAdd && removeFrom < addFrom) ? addFrom : removeFrom + 1;
      const oldPos = common(from, d);
      const newPos = oldPos - d;
      if (oldPos + 1 >= oldLen && newPos + 1 >= newLen) return edits;
      best[offset + d] = oldPos;
      if (oldPos + 1 >= oldLen) maxDiagonal = Math.min(maxDiagonal, d - 1);
      if (newPos + 1 >= newLen) minDiagonal = Math.max(minDiagonal, d + 1);
    }
  }
  return undefined;
}
