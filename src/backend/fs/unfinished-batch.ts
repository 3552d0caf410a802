import type { FileHandle } from "node:fs/promises";
import { lineBatch, parseEventLine, type LineMark } from "../../core/envelope.js";
import { LogCorruptError } from "../../core/errors.js";
import { lineNumberAt, readLines, type Tail } from "./lines.js";
import { keptEndFor, keptEndForwards } from "./seek.js";

/**
 * When the log ends inside a batch (the lines of one `appendMany`, marked `"batch":[first,last]`, whose
 * last line is missing: its writer was killed mid-write; docs/ARCHITECTURE.md, "On disk"), the offset
 * where that batch starts: the next lock holder cuts from there, so a batch is in the log whole or not at
 * all. Undefined when the last line ends a batch or has none (or does not parse: the caller reports it).
 *
 * Only the batch's own run is ever cut: every line from that offset on must carry the same mark, its
 * sequences rising from `first`. Anything else (a repeated or reordered line) is damage, LOG_CORRUPT naming the
 * line, never a reason to cut further back.
 */
export async function unfinishedBatchStart(file: string, fh: FileHandle, tail: Tail): Promise<number | undefined> {
  return (await checkUnfinishedBatch(file, fh, tail))?.start;
}

/**
 * How far {@link checkUnfinishedBatch} has checked the unfinished batch a log ends in. Lines only ever follow
 * what was checked, until a cut (recorded in `events.cuts`) or a new log: a caller that sees neither since may
 * hand it back, and the check goes on from `checkedTo` instead of from the batch's start (a reader asking for
 * the last event again and again while a 999,999-event undo is being written, or after its writer was killed).
 */
export interface UnfinishedBatch {
  first: number;
  last: number;
  /** Where the batch starts: what the next lock holder cuts from. */
  start: number;
  /** The end of the last line checked, and its sequence. */
  checkedTo: number;
  previous: number;
}

/** {@link unfinishedBatchStart}, with how far it checked, going on from `known` when that is the same batch. */
export async function checkUnfinishedBatch(
  file: string,
  fh: FileHandle,
  tail: Tail,
  known?: UnfinishedBatch,
): Promise<UnfinishedBatch | undefined> {
  if (!tail.last) return undefined;
  const event = parseEventLine(tail.last.text);
  if (typeof event === "string") return undefined;
  const batch = lineBatch(event);
  if (!batch || event.sequence >= batch.last) return undefined;
  const check: UnfinishedBatch =
    known !== undefined &&
    known.first === batch.first &&
    known.last === batch.last &&
    known.checkedTo <= tail.completeEnd
      ? { ...known }
      : await batchStart(file, fh, tail, batch);
  const lineMark: LineMark = { batch: undefined };
  // Through `fh`, not the path: a lock-free caller (lastEvent) may find another log renamed over the path
  // since it read `tail` (a rewind cutting inside a batch), whose lines are no continuation of this one.
  for await (const lines of readLines(file, { handle: fh, startAt: async () => check.checkedTo })) {
    for (const line of lines) {
      if (line.end > tail.completeEnd) return check;
      const e = parseEventLine(line.text, lineMark);
      const mark = typeof e === "string" ? undefined : lineMark.batch;
      const first = check.previous < batch.first;
      if (
        typeof e === "string" ||
        mark?.first !== batch.first ||
        mark.last !== batch.last ||
        (first ? e.sequence !== batch.first : e.sequence <= check.previous)
      ) {
        const reason = `the log ends inside batch ${batch.first}-${batch.last}, but this line is not the next of it`;
        throw new LogCorruptError(file, await lineNumberAt(file, line.end - 1), reason);
      }
      check.previous = e.sequence;
      check.checkedTo = line.end;
    }
  }
  return check;
}

/** The batch's start, found backwards from the end: nothing of it checked yet. */
async function batchStart(
  file: string,
  fh: FileHandle,
  tail: Tail,
  batch: { first: number; last: number },
): Promise<UnfinishedBatch> {
  const start =
    (await keptEndFor(fh, tail.completeEnd, batch.first - 1)) ?? (await keptEndForwards(file, batch.first - 1));
  // Sequences in a batch rise but may skip (a rewind's marker takes the number after the highest ever written).
  return {
    first: batch.first,
    last: batch.last,
    start: start.offset,
    checkedTo: start.offset,
    previous: batch.first - 1,
  };
}
