import { basename, dirname } from "node:path";
import { READ, openStoreFileNow } from "./store-files.js";
import { closeOwned, owned, readAt, sizeOf, type OpenFile } from "./log-reads.js";
import { yieldIfLong, yieldNow } from "../../core/time-slices.js";
import { cutMark, firstChangedSince } from "./log-cuts.js";
import { TapeRewoundError } from "../../core/errors.js";

/** One complete line of a JSONL file. `end` is the byte offset just past its newline. */
export interface Line {
  text: string;
  /** 1-based; NaN when reading started past the file's start (`startAt`), where it is not known. */
  number: number;
  end: number;
}

const NEWLINE = 0x0a;

/**
 * Streams the complete lines of a file in fixed-size chunks, so memory stays flat however long
 * the file is (bench "replay 1,000,000 events, peak RSS growth"), where a whole-file read stops at
 * V8's 512 MiB string limit (docs/ARCHITECTURE.md, "On disk"). A trailing fragment with no newline
 * — a torn write — is not yielded.
 */
export async function* readLines(
  path: string,
  options: {
    chunkBytes?: number;
    signal?: AbortSignal;
    /** Where to start, found on the opened file (so a rename meanwhile cannot split the two): a line's start. */
    startAt?: ((fh: OpenFile) => Promise<number>) | undefined;
    /**
     * The log's cut record (log-cuts.ts): checked after every read, so a cut in place meanwhile never
     * glues bytes from before it to bytes from after it. Lines handed out before the cut point are still
     * the log's: reading goes on from there. A cut below them is TAPE_REWOUND.
     */
    cutsFile?: string;
    /** Read this already open file (left open) instead of opening `path`, which then only names it. */
    handle?: OpenFile;
    /** Told the open file, for a reader that looks ahead in it (batch-end.ts) between two yields. */
    onOpen?: (log: OpenLog) => void;
  } = {},
): AsyncGenerator<Line[]> {
  const { signal, cutsFile } = options;
  const sessionId = basename(dirname(path));
  const chunk = Buffer.allocUnsafe(options.chunkBytes ?? 64 * 1024);
  // A log is always a session folder's own file: its folder's name is the session's id.
  const fh = options.handle ?? openLogNow(sessionId, path);
  if (fh === undefined) return;
  try {
    // Looked at before the first byte is read (the start is found by reading too).
    let mark = cutsFile === undefined ? 0 : cutMark(cutsFile);
    options.onOpen?.({ handle: fh, uncut: () => cutsFile === undefined || cutMark(cutsFile) === mark });
    let position = options.startAt ? await options.startAt(fh) : 0;
    let lineNumber = position === 0 ? 0 : Number.NaN;
    let handedOut: number | undefined; // end of the last line handed out
    // Bytes of a line that started in an earlier chunk, joined once, when its newline comes: joining
    // them chunk by chunk copied a long line over and over, a cost growing with the square of its length
    // (bench "readAll, a log with one 50 MB event, time per MB" shows it flat).
    let carry: Buffer[] = [];
    for (let reads = 0; ; reads++) {
      signal?.throwIfAborted();
      // The reader parsed and checked the lines handed out last between two reads (synchronous since they stopped
      // going through the pool): the event loop turns before the next one, as it did at each read then.
      if (reads > 0) await yieldNow();
      const bytesRead = readAt(fh, chunk, 0, chunk.length, position);
      if (cutsFile !== undefined && cutMark(cutsFile) !== mark) {
        // Cut in place since the last look: what was just read (and any carried part line) may be from after it.
        let changedFrom: number;
        ({ changedFrom, mark } = await firstChangedSince(sessionId, cutsFile, mark));
        carry = [];
        if (handedOut === undefined) {
          position = options.startAt ? await options.startAt(fh) : 0; // nothing handed out: start again
          lineNumber = position === 0 ? 0 : Number.NaN;
        } else if (handedOut <= changedFrom) position = handedOut;
        else throw new TapeRewoundError(sessionId);
        continue;
      }
      if (bytesRead === 0) return;
      const chunkStart = position;
      position += bytesRead;
      // Lines are handed out per chunk: one await per chunk instead of one per line.
      const lines: Line[] = [];
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(NEWLINE, start);
        if (nl === -1 || nl >= bytesRead) break;
        let text: string;
        if (carry.length === 0) text = chunk.toString("utf8", start, nl);
        else {
          carry.push(chunk.subarray(start, nl));
          text = Buffer.concat(carry).toString("utf8");
          carry = []; // only here: a new array per line would be garbage on replay's hot path
        }
        lines.push({ text, number: ++lineNumber, end: chunkStart + nl + 1 });
        start = nl + 1;
      }
      if (start < bytesRead) carry.push(Buffer.from(chunk.subarray(start, bytesRead))); // copy: `chunk` is reused
      if (lines.length > 0) {
        handedOut = lines[lines.length - 1]!.end;
        yield lines;
      }
    }
  } finally {
    if (options.handle === undefined) closeOwned(fh);
  }
}

/** The log at `path` opened as a store file is (never through a link), or undefined when there is none. */
function openLogNow(sessionId: string, path: string): OpenFile | undefined {
  try {
    return owned(openStoreFileNow(sessionId, path, READ));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** The file a {@link readLines} reads, while it reads it. */
export interface OpenLog {
  handle: OpenFile;
  /**
   * True while no cut in place was recorded since the reader last looked (log-cuts.ts): bytes read from
   * `handle` since then, checked with this after reading them, are the log the reader reads.
   */
  uncut: () => boolean;
}

export interface Tail {
  /** The last complete line, if any. */
  last?: { text: string; start: number; end: number };
  /** File size. */
  size: number;
  /** Offset where a torn fragment begins (== size when the file ends with a newline). */
  completeEnd: number;
}

/** Finds the last complete line and any torn fragment after it, reading backwards from the end. */
export async function readTail(fh: OpenFile, size?: number): Promise<Tail> {
  const fileSize = size ?? sizeOf(fh);
  if (fileSize === 0) return { size: 0, completeEnd: 0 };
  const step = 64 * 1024;
  let completeEnd = -1; // offset just past the last newline
  let lineStart = -1;
  let buffers: Buffer[] = [];
  let from = fileSize;
  while (from > 0 && lineStart === -1) {
    const at = Math.max(0, from - step);
    const buf = Buffer.allocUnsafe(from - at);
    await yieldIfLong();
    const bytesRead = readAt(fh, buf, 0, buf.length, at);
    const piece = buf.subarray(0, bytesRead);
    buffers.unshift(piece);
    let searchEnd = piece.length;
    while (searchEnd > 0) {
      const nl = piece.lastIndexOf(NEWLINE, searchEnd - 1);
      if (nl === -1) break;
      if (completeEnd === -1) {
        completeEnd = at + nl + 1;
        searchEnd = nl;
        continue;
      }
      lineStart = at + nl + 1;
      break;
    }
    from = at;
  }
  if (completeEnd === -1) return { size: fileSize, completeEnd: 0 }; // no newline at all: all torn
  if (lineStart === -1) lineStart = 0;
  const whole = Buffer.concat(buffers);
  const base = fileSize - whole.length;
  const text = whole.toString("utf8", lineStart - base, completeEnd - 1 - base);
  buffers = [];
  return { last: { text, start: lineStart, end: completeEnd }, size: fileSize, completeEnd };
}

/** 1-based number of the line holding byte `offset` of `file`. */
export async function lineNumberAt(file: string, offset: number): Promise<number> {
  let count = 0;
  for await (const lines of readLines(file)) {
    for (const line of lines) {
      if (line.end > offset) return line.number;
      count = line.number;
    }
  }
  return count + 1;
}
