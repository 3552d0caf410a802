import { lineBatch, parseEventLine, type LineMark } from "../../core/envelope.js";
import { LogCorruptError } from "../../core/errors.js";
import { lineNumberAt, readLines, type Tail } from "./lines.js";
import { keptEndFor, keptEndForwards } from "./seek.js";
import type { OpenFile } from "./log-reads.js";

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
export async function unfinishedBatchStart(file: string, fh: OpenFile, tail: Tail): Promise<number | undefined> {
  if (!tail.last) return undefined;
  const event = parseEventLine(tail.last.text, undefined, "as-written");
  if (typeof event === "string") return undefined;
  const batch = lineBatch(event);
  if (!batch || event.sequence >= batch.last) return undefined;
  const start =
    (await keptEndFor(fh, tail.completeEnd, batch.first - 1)) ?? (await keptEndForwards(file, batch.first - 1));
  // Sequences in a batch rise but may skip (a rewind's marker takes the number after the highest ever written).
  let previous = batch.first - 1;
  // Through `fh`, not the path: a lock-free caller (lastEvent) may find another log renamed over the path
  // since it read `tail` (a rewind cutting inside a batch), whose lines are no continuation of this one.
  const lineMark: LineMark = { batch: undefined };
  for await (const lines of readLines(file, { handle: fh, startAt: async () => start.offset })) {
    for (const line of lines) {
      if (line.end > tail.completeEnd) return start.offset;
      const e = parseEventLine(line.text, lineMark, "as-written");
      const mark = typeof e === "string" ? undefined : lineMark.batch;
      const first = previous < batch.first;
      if (
        typeof e === "string" ||
        mark?.first !== batch.first ||
        mark.last !== batch.last ||
        (first ? e.sequence !== batch.first : e.sequence <= previous)
      ) {
        const reason = `the log ends inside batch ${batch.first}-${batch.last}, but this line is not the next of it`;
        throw new LogCorruptError(file, await lineNumberAt(file, line.end - 1), reason);
      }
      previous = e.sequence;
    }
  }
  return start.offset;
}
