import { parseEventLine } from "../../core/envelope.js";
import { LogCorruptError } from "../../core/errors.js";
import { readLines } from "./lines.js";
import { readAt, type OpenFile } from "./log-reads.js";
import { yieldNow } from "../../core/time-slices.js";

const NEWLINE = 0x0a;
const STEP = 64 * 1024;
/** A line longer than this is not searched through backwards: the caller reads forwards instead. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;

export interface KeptEnd {
  /** Byte offset just past the last line whose sequence is at most the one asked for (0: none). */
  offset: number;
  /** That line's sequence (0: none). */
  sequence: number;
}

/**
 * Finds where the events up to `sequence` end, reading the log backwards from its end: the cost
 * follows what lies after that point, not the log's length (docs/ARCHITECTURE.md, "On disk").
 * A torn fragment at the end is passed over. Returns undefined when a line on the way does not
 * parse or is too long to search through: the caller then reads forwards, which reports damage
 * with its line number.
 */
export async function keptEndFor(fh: OpenFile, size: number, sequence: number): Promise<KeptEnd | undefined> {
  // Chunks in file order covering [chunks[0].start, lineEnd): the bytes not yet cut into lines.
  const chunks: { start: number; bytes: Buffer }[] = [];
  let readFrom = size;
  let lineEnd = -1; // just past the newline of the line being looked at; -1 until the last newline is found

  const readMore = async (): Promise<boolean> => {
    if (readFrom === 0) return false;
    const at = Math.max(0, readFrom - STEP);
    const bytes = Buffer.allocUnsafe(readFrom - at);
    // Each chunk's lines are parsed between reads: the event loop turns before the next one.
    if (chunks.length > 0) await yieldNow();
    const bytesRead = readAt(fh, bytes, 0, bytes.length, at);
    chunks.unshift({ start: at, bytes: bytes.subarray(0, bytesRead) });
    readFrom = at;
    return true;
  };

  /** Offset of the last newline before `before`, reading more as needed; -1 at the file's start. */
  const newlineBefore = async (before: number): Promise<number | undefined> => {
    for (let i = chunks.length - 1; ; i--) {
      if (i < 0) {
        if (before - readFrom > MAX_LINE_BYTES) return undefined;
        if (!(await readMore())) return -1;
        i = 0;
      }
      const chunk = chunks[i]!;
      if (chunk.start >= before) continue;
      const found = chunk.bytes.lastIndexOf(NEWLINE, before - chunk.start - 1);
      if (found !== -1) return chunk.start + found;
      if (i === 0 && before - readFrom > MAX_LINE_BYTES) return undefined;
    }
  };

  const text = (from: number, to: number): string => {
    const parts = chunks
      .filter((c) => c.start < to && c.start + c.bytes.length > from)
      .map((c) => c.bytes.subarray(Math.max(0, from - c.start), Math.min(c.bytes.length, to - c.start)));
    return Buffer.concat(parts).toString("utf8");
  };

  const last = await newlineBefore(size);
  if (last === undefined) return undefined;
  if (last === -1) return { offset: 0, sequence: 0 }; // no complete line at all
  lineEnd = last + 1;
  for (;;) {
    const previous = await newlineBefore(lineEnd - 1);
    if (previous === undefined) return undefined;
    const event = parseEventLine(text(previous + 1, lineEnd - 1), undefined, "as-written");
    if (typeof event === "string") return undefined;
    if (event.sequence <= sequence) return { offset: lineEnd, sequence: event.sequence };
    if (previous === -1) return { offset: 0, sequence: 0 };
    lineEnd = previous + 1;
    // Chunks wholly after the line now looked at are done with: memory follows one line, not the cut.
    while (chunks.length > 1 && chunks[chunks.length - 1]!.start >= lineEnd) chunks.pop();
  }
}

/**
 * {@link keptEndFor} the long way round, reading `file` from its start: for when the backward search
 * meets a line it cannot parse or one too long, and the way that names a damaged line (LOG_CORRUPT).
 */
export async function keptEndForwards(file: string, sequence: number): Promise<KeptEnd> {
  const kept = { offset: 0, sequence: 0 };
  for await (const lines of readLines(file)) {
    for (const line of lines) {
      const parsed = parseEventLine(line.text, undefined, "as-written");
      if (typeof parsed === "string") throw new LogCorruptError(file, line.number, parsed);
      if (parsed.sequence > sequence) return kept;
      kept.offset = line.end;
      kept.sequence = parsed.sequence;
    }
  }
  return kept;
}
