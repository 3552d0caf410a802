import { formatPatch, structuredPatch } from "diff";
import type { FileDiff } from "./events.js";
import { countLineChanges } from "./line-changes.js";

/**
 * How much a line diff may cost (docs/ARCHITECTURE.md, "Diffs"). A file over either size bound, or
 * one that looks binary, is counted in bytes instead: the whole file in, the whole file out. A pair
 * of texts whose line diff needs more than `maxEditLength` inserted plus deleted lines is counted in
 * bytes too: the search grows with the square of the edit, so two large unrelated files stop early.
 * Past `maxTotalBytes` of text diffed in one plan or page, the remaining files are counted in bytes.
 */
export interface DiffLimits {
  /** Largest side, in bytes, that gets a line diff. */
  maxBytes: number;
  /** Largest side, in lines, that gets a line diff. */
  maxLines: number;
  /** Most changed lines (insertions + deletions) a line diff may find before it gives up. */
  maxEditLength: number;
  /** Most bytes (both sides) line-diffed in one report; see {@link DiffBudget}. */
  maxTotalBytes: number;
}

export const DIFF_LIMITS: Readonly<DiffLimits> = Object.freeze({
  maxBytes: 1024 * 1024,
  maxLines: 20_000,
  maxEditLength: 1_000,
  maxTotalBytes: 16 * 1024 * 1024,
});

/** What is left of `maxTotalBytes` while one report is made: share one across its files. */
export interface DiffBudget {
  bytesLeft: number;
}

export function diffBudget(limits: DiffLimits = DIFF_LIMITS): DiffBudget {
  return { bytesLeft: limits.maxTotalBytes };
}

/** What a file diff found, and the unified diff itself when one was asked for and could be made. */
export interface FileDiffResult {
  diff: FileDiff;
  patch?: string;
}

// Git's test: a NUL byte in the first 8000 bytes makes a file binary.
const BINARY_PROBE = 8000;

export function looksBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, BINARY_PROBE).includes(0);
}

/**
 * The change from `before` to `after` (either absent: the file does not exist on that side), in lines
 * when both sides are text within `limits`, in bytes otherwise. `sizes` gives a side's size when its
 * bytes were not read (a file too large to hold): that side is then counted in bytes. `identical` says
 * both sides hold the same bytes (same hash) when they were not both read; a file counted in bytes whose
 * sides are the same (a mode change only, a file written again as it was) inserts and deletes nothing.
 * With `patch`, a unified diff with git's `a/` and `b/` headers comes along for line diffs.
 */
export function diffFile(
  path: string,
  before: Buffer | undefined,
  after: Buffer | undefined,
  options: {
    patch?: boolean;
    limits?: DiffLimits;
    budget?: DiffBudget;
    sizes?: { before?: number; after?: number };
    identical?: boolean;
  } = {},
): FileDiffResult {
  const limits = options.limits ?? DIFF_LIMITS;
  const beforeSize = before?.length ?? options.sizes?.before ?? 0;
  const afterSize = after?.length ?? options.sizes?.after ?? 0;
  const same = options.identical === true || (before !== undefined && after !== undefined && before.equals(after));
  const bytes = (reason: string): FileDiffResult => ({
    diff: { unit: "bytes", insertions: same ? 0 : afterSize, deletions: same ? 0 : beforeSize, reason },
  });
  const unread = (before === undefined && options.sizes?.before) || (after === undefined && options.sizes?.after);
  if (unread || beforeSize > limits.maxBytes || afterSize > limits.maxBytes) return bytes("too_large");
  if ((before && looksBinary(before)) || (after && looksBinary(after))) return bytes("binary");
  const oldText = before?.toString("utf8") ?? "";
  const newText = after?.toString("utf8") ?? "";
  if (lineCount(oldText) > limits.maxLines || lineCount(newText) > limits.maxLines) return bytes("too_large");
  if (options.budget) {
    if (beforeSize + afterSize > options.budget.bytesLeft) return bytes("over_budget");
    options.budget.bytesLeft -= beforeSize + afterSize;
  }

  if (!options.patch) {
    // Counts only: the same search without the patch's bookkeeping (line-changes.ts).
    const counted = countLineChanges(oldText, newText, limits.maxEditLength);
    return counted ? { diff: { unit: "lines", ...counted } } : bytes("too_many_changes");
  }
  const structured = structuredPatch(
    before === undefined ? "/dev/null" : `a/${path}`,
    after === undefined ? "/dev/null" : `b/${path}`,
    oldText,
    newText,
    undefined,
    undefined,
    { context: 3, maxEditLength: limits.maxEditLength },
  );
  if (!structured) return bytes("too_many_changes");
  let insertions = 0;
  let deletions = 0;
  for (const hunk of structured.hunks)
    for (const line of hunk.lines) {
      if (line.startsWith("+")) insertions++;
      else if (line.startsWith("-")) deletions++;
    }
  const result: FileDiffResult = { diff: { unit: "lines", insertions, deletions } };
  if (structured.hunks.length > 0)
    result.patch = formatPatch(structured, { includeIndex: false, includeUnderline: false, includeFileHeaders: true });
  return result;
}

function lineCount(text: string): number {
  let lines = 0;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) lines++;
  return text.length > 0 && !text.endsWith("\n") ? lines + 1 : lines;
}

/** Totals of many file diffs, lines and bytes apart (they do not add up). */
export interface DiffTotals {
  lines: { insertions: number; deletions: number };
  bytes: { insertions: number; deletions: number };
}

export function totalDiffs(diffs: Iterable<FileDiff | undefined>): DiffTotals {
  const totals: DiffTotals = { lines: { insertions: 0, deletions: 0 }, bytes: { insertions: 0, deletions: 0 } };
  for (const diff of diffs) {
    if (!diff) continue;
    const sum = diff.unit === "lines" ? totals.lines : totals.bytes;
    sum.insertions += diff.insertions;
    sum.deletions += diff.deletions;
  }
  return totals;
}
