import { lineBatch, parseEventLine, type LineBatch, type LineMark } from "../../core/envelope.js";
import { readLines, type OpenLog } from "./lines.js";
import { signalOf } from "../../core/defined-fields.js";
import { readAt, sizeOf, type OpenFile } from "./log-reads.js";
import { yieldIfLong } from "../../core/time-slices.js";

// A reader holds a batch's events back until it knows the batch's end is in the log (whole-batches.ts). For a
// batch too big to hold (an undo putting back 999,999 events) it looks ahead in the same open file instead,
// and hands the batch out as it reads it once that end is known (docs/ARCHITECTURE.md, "On disk", batches).

/**
 * What lies past the part of a batch a reader holds:
 * - `released`: something further on releases the batch (its last line, or a line not of it, which the
 *   reader will hand out or report), so the batch can go out as it is read;
 * - `unfinished`: every complete line up to the log's end is the batch's next, its last line is not among
 *   them: the log ends inside it (its writer still writes or was killed), so the read ends before it;
 * - `cut`: the log was cut in place meanwhile (log-cuts.ts), so what was read may not be the reader's log:
 *   it meets the cut at its next read, and may look again after that.
 */
export type PastTheHold = "released" | "unfinished" | "cut";

/**
 * Looks past byte `from` of the open log (the end of the last line of `batch` the reader read, whose sequence
 * was `previous`). First a byte search for the batch's last line, parsing only the lines that match: cheap,
 * and all a finished batch needs. When that finds nothing, the lines are read and judged exactly as the
 * reader judges them, without keeping any: memory stays one line either way.
 */
export async function lookPastBatch(
  file: string,
  log: OpenLog,
  from: number,
  batch: LineBatch,
  previous: number,
  signal?: AbortSignal,
): Promise<PastTheHold> {
  if (await lastLineAhead(log.handle, from, batch)) return log.uncut() ? "released" : "cut";
  const released = await releasedAhead(file, log.handle, from, batch, previous, signal);
  if (!log.uncut()) return "cut";
  return released ? "released" : "unfinished";
}

const NEWLINE = 0x0a;
const SCAN_BYTES = 256 * 1024;

/**
 * True when a complete line after `from` is the batch's last: found by the bytes every such line holds
 * (`"sequence":last,"batch":[first,last],`, the envelope's order, serializeEvent), confirmed by parsing
 * that line alone. False says only "not found this way".
 *
 * The search runs from both ends of the log at once, a read from the front, then one from the back: a batch
 * that ends the log (an undo's, the common case) is found in the last read of the file instead of after
 * reading the whole batch again, and one that ends early is found as soon as from the front alone. What it
 * reads is at most twice the distance from `from` or from the log's end, whichever is nearer. In a log not
 * cut meanwhile (the caller asks) sequences only grow, so one line at most can match: either end finds it.
 */
export async function lastLineAhead(
  fh: OpenFile,
  from: number,
  batch: LineBatch,
  scanBytes = SCAN_BYTES, // smaller in tests, so that lines and needles fall across reads
): Promise<boolean> {
  const needle = Buffer.from(`"sequence":${batch.last},"batch":[${batch.first},${batch.last}],`);
  const buf = Buffer.allocUnsafe(Math.max(scanBytes, needle.length));
  const starts = buf.length - needle.length + 1; // needle positions one read covers
  // Positions where the needle could start and no read has looked yet: [low, high).
  let low = from;
  let high = sizeOf(fh) - needle.length + 1;
  const search = async (first: number, end: number): Promise<boolean> => {
    const length = end - first + needle.length - 1;
    await yieldIfLong();
    const bytesRead = readAt(fh, buf, 0, length, first);
    const bytes = buf.subarray(0, bytesRead);
    for (let at = bytes.indexOf(needle); at !== -1; at = bytes.indexOf(needle, at + 1)) {
      const nl = bytes.lastIndexOf(NEWLINE, at);
      const lineStart = nl !== -1 ? first + nl + 1 : await lineStartBefore(fh, first, from);
      const text = await lineAt(fh, lineStart);
      if (text === undefined) continue; // a torn last line is no line
      const event = parseEventLine(text);
      if (typeof event === "string" || event.sequence !== batch.last) continue;
      const mark = lineBatch(event);
      if (mark?.first === batch.first && mark.last === batch.last) return true;
    }
    return false;
  };
  for (let fromFront = true; low < high; fromFront = !fromFront) {
    if (fromFront) {
      const end = Math.min(low + starts, high);
      if (await search(low, end)) return true;
      low = end;
    } else {
      const first = Math.max(high - starts, low);
      if (await search(first, high)) return true;
      high = first;
    }
  }
  return false;
}

/** Where the line holding byte `at` starts: just past the newline before it, or `from` (a line's start). */
async function lineStartBefore(fh: OpenFile, at: number, from: number): Promise<number> {
  const buf = Buffer.allocUnsafe(4096);
  for (let end = at; end > from; ) {
    const start = Math.max(from, end - buf.length);
    await yieldIfLong();
    const bytesRead = readAt(fh, buf, 0, end - start, start);
    const nl = buf.subarray(0, bytesRead).lastIndexOf(NEWLINE);
    if (nl !== -1) return start + nl + 1;
    end = start;
  }
  return from;
}

/** The complete line starting at `start`, or undefined when the file ends before its newline. */
async function lineAt(fh: OpenFile, start: number): Promise<string | undefined> {
  const pieces: Buffer[] = [];
  const buf = Buffer.allocUnsafe(SCAN_BYTES);
  for (let position = start; ; ) {
    await yieldIfLong();
    const bytesRead = readAt(fh, buf, 0, buf.length, position);
    if (bytesRead === 0) return undefined;
    const nl = buf.indexOf(NEWLINE);
    if (nl !== -1 && nl < bytesRead) {
      pieces.push(buf.subarray(0, nl));
      return Buffer.concat(pieces).toString("utf8");
    }
    pieces.push(Buffer.from(buf.subarray(0, bytesRead))); // copy: `buf` is read into again
    position += bytesRead;
  }
}

/**
 * True when a line after `from` releases the batch as the reader would (fs-backend.ts, readEventBatches):
 * one that is damaged, goes backwards, is of another batch or none, or ends this one. False when every
 * complete line to the log's end is the batch's next.
 */
async function releasedAhead(
  file: string,
  fh: OpenFile,
  from: number,
  batch: LineBatch,
  previous: number,
  signal?: AbortSignal,
): Promise<boolean> {
  const reading = { handle: fh, startAt: async () => from, ...signalOf(signal) };
  const lineMark: LineMark = { batch: undefined };
  for await (const lines of readLines(file, reading)) {
    for (const line of lines) {
      const event = parseEventLine(line.text, lineMark);
      if (typeof event === "string" || event.sequence <= previous) return true;
      const mark = lineMark.batch;
      if (mark?.first !== batch.first || event.sequence >= mark.last) return true;
      previous = event.sequence;
    }
  }
  return false;
}
