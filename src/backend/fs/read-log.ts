// Reading a session's log, forwards a chunk at a time or its last event backwards, without the lock: what a
// reader sees of batches still being written and of cuts made meanwhile (docs/ARCHITECTURE.md, "On disk").
import { sizeOf, type OpenFile } from "./log-reads.js";
import { parseEventLine, type LineBatch, type LineMark } from "../../core/envelope.js";
import { LogCorruptError, isAgentTapeError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import { signalOf } from "../../core/defined-fields.js";
import type { ReadEventsOptions } from "../types.js";
import { lookPastBatch } from "./batch-end.js";
import { lineNumberAt, readLines, readTail, type Line, type OpenLog } from "./lines.js";
import { cutMark } from "./log-cuts.js";
import { keptEndFor } from "./seek.js";
import { unfinishedBatchStart } from "./unfinished-batch.js";
import { WholeBatches } from "./whole-batches.js";

/** The log one chunk's worth of events at a time: one await per 64 KB, not per event. */
export async function* readLogBatches(
  file: string,
  cutsFile: string,
  options: ReadEventsOptions,
): AsyncGenerator<StoredEvent[]> {
  const read = new LogRead(file, options);
  for await (const lines of readLines(file, read.reading(cutsFile))) {
    const batch: StoredEvent[] = [];
    const step = await read.take(lines, batch);
    // The events before the end of the range, or before damage, still come out.
    if (batch.length > 0) yield batch;
    if (isAgentTapeError(step, "LOG_CORRUPT")) throw step;
    if (step === "done") return;
  }
}

/** What reading a chunk's lines left: read on, stop (past the range, or past what a reader may see), or damage. */
type Step = "more" | "done" | LogCorruptError;

/** One forward read of the log: the range it wants, the events it holds back, where it is. */
class LogRead {
  private readonly from: number;
  private readonly to: number;
  private previous = 0;
  // A batch's events come out once its end is known to be in the log: never part of an appendMany
  // (whole-batches.ts); one too big to hold is looked past in the file and streamed (batch-end.ts).
  private readonly wholeBatches = new WholeBatches();
  private readonly released: StoredEvent[] = [];
  private readonly mark: LineMark = { batch: undefined }; // the batch mark of the line at hand
  private log: OpenLog | undefined;
  private chunks = 0;
  private lookedAt = -1; // the chunk in which the reader last looked past a batch: once per chunk at most

  constructor(
    private readonly file: string,
    private readonly options: ReadEventsOptions,
  ) {
    this.from = options.fromSequence ?? 0;
    this.to = options.toSequence ?? Number.POSITIVE_INFINITY;
  }

  /** The options of readLines for this read. */
  reading(cutsFile: string) {
    const from = this.from;
    // From a sequence past the start: found by reading backwards from the end (see seek.ts), so a
    // read of the last few events costs the same however long the log.
    const startAt =
      from > 1 ? async (fh: OpenFile) => (await keptEndFor(fh, sizeOf(fh), from - 1))?.offset ?? 0 : undefined;
    return { ...signalOf(this.options), startAt, cutsFile, onOpen: (open: OpenLog) => (this.log = open) };
  }

  /** Puts the wanted events of one chunk's lines into `batch`. */
  async take(lines: readonly Line[], batch: StoredEvent[]): Promise<Step> {
    this.chunks++;
    for (const line of lines) {
      let event = parseEventLine(line.text, this.mark);
      if (typeof event !== "string" && event.sequence <= this.previous)
        event = `sequence ${event.sequence} does not follow ${this.previous}`;
      if (typeof event === "string") {
        const damage = await this.damaged(line, event, batch);
        if (damage) return damage;
        continue;
      }
      this.previous = event.sequence;
      // Most lines carry no batch mark while nothing is held: straight through, no copying (replay speed).
      if (this.wholeBatches.passes(this.mark.batch)) {
        if (event.sequence < this.from) continue;
        if (event.sequence > this.to) return "done";
        batch.push(event);
        continue;
      }
      // A batch that starts past the range has nothing wanted, finished or not: no need to hold it.
      if (this.wholeBatches.idle && event.sequence > this.to) return "done";
      const held = this.hold(event, line, batch);
      if ((typeof held === "string" ? held : await held) === "done") return "done";
    }
    return "more";
  }

  /** A line that is not the next event: reported to onCorrupt and passed, or the error that stops the read. */
  private async damaged(line: Line, reason: string, batch: StoredEvent[]): Promise<LogCorruptError | undefined> {
    // The damage is not a batch's missing end: the events held back before it are in the log for good.
    this.wholeBatches.flush(this.released);
    this.handOut(batch);
    // Started mid-file: the line's number is counted only now, on the way to reporting it.
    const number = Number.isNaN(line.number) ? await lineNumberAt(this.file, line.end - 1) : line.number;
    if (!this.options.onCorrupt) return new LogCorruptError(this.file, number, reason);
    this.options.onCorrupt({ line: number, reason, text: line.text.slice(0, 200) });
    return undefined;
  }

  /**
   * An event of a batch: held until the batch's end is seen, or streamed once the batch outgrows the hold. Settled
   * at once unless it must look past the batch. An await per event of a streamed batch made garbage enough for
   * the collector to run several times within one chunk, and each run moved the chunk's events read so far (held
   * until the chunk is handed out) to the old generation (docs/ARCHITECTURE.md, "On disk", readers and batches).
   */
  private hold(event: StoredEvent, line: Line, batch: StoredEvent[]): "more" | "done" | Promise<"more" | "done"> {
    this.wholeBatches.take(event, this.mark.batch, line.text.length, this.released);
    if (!this.handOut(batch)) return "done";
    const outgrown = this.wholeBatches.outgrown();
    if (outgrown === undefined || this.log === undefined || this.lookedAt === this.chunks) return "more";
    return this.lookPast(this.log, outgrown, event, line, batch);
  }

  /** Looks past a batch that outgrew the hold: streamed from here when its end is in the log. */
  private async lookPast(
    log: OpenLog,
    outgrown: LineBatch,
    event: StoredEvent,
    line: Line,
    batch: StoredEvent[],
  ): Promise<"more" | "done"> {
    this.lookedAt = this.chunks;
    const past = await lookPastBatch(this.file, log, line.end, outgrown, event.sequence, this.options.signal);
    if (past === "released") {
      this.wholeBatches.stream(this.released);
      return this.handOut(batch) ? "more" : "done";
    }
    // "unfinished": the log ends inside this batch: it is left out, as a torn line is, and nothing follows it.
    // "cut": the log changed under the look; the next read meets the cut (lines.ts), then this looks again.
    return past === "unfinished" ? "done" : "more";
  }

  /** Moves what was released into `batch`, within the range; false once past its end. */
  private handOut(batch: StoredEvent[]): boolean {
    for (const ready of this.released) {
      if (ready.sequence < this.from) continue;
      if (ready.sequence > this.to) {
        this.released.length = 0;
        return false;
      }
      batch.push(ready);
    }
    this.released.length = 0;
    return true;
  }
}

/**
 * Reads of the log's end {@link readLastEvent} makes while cuts keep landing under it, before it reports
 * what it read (a cut each time means a rewind loop faster than a read of one line: not expected to end).
 */
const MAX_TAIL_READS = 100;

/**
 * The log's last event a reader sees, read backwards with no lock. A cut in place meanwhile (an ftruncate, then
 * appends at the same offsets) can make the bytes read a mix of two logs, which looks like damage. Each cut is
 * recorded before the ftruncate and again after it (log-cuts.ts), and shrinks the file: either seen after the
 * read means the tail is read again, on the log as it is now.
 */
export async function readLastEvent(file: string, fh: OpenFile, cuts: string): Promise<StoredEvent | undefined> {
  for (let attempt = 1; ; attempt++) {
    const mark = cutMark(cuts);
    const size = sizeOf(fh);
    const cutMeanwhile = async () => cutMark(cuts) !== mark || sizeOf(fh) < size;
    let last: StoredEvent | undefined;
    try {
      last = await lastWholeEvent(file, fh, size);
    } catch (error) {
      if (attempt < MAX_TAIL_READS && (await cutMeanwhile())) continue;
      throw error;
    }
    if (attempt < MAX_TAIL_READS && (await cutMeanwhile())) continue;
    return last;
  }
}

/** The last event of the log's first `size` bytes that a reader sees: not one of an unfinished batch. */
async function lastWholeEvent(file: string, fh: OpenFile, size: number): Promise<StoredEvent | undefined> {
  const tail = await readTail(fh, size);
  if (!tail.last) return undefined;
  const parsed = parseEventLine(tail.last.text);
  if (typeof parsed === "string") throw new LogCorruptError(file, await lineNumberAt(file, tail.last.start), parsed);
  // The log ends inside a batch (its writer was killed mid-write, or is still writing): readers do not
  // see it, so the last event is the one before it.
  const start = await unfinishedBatchStart(file, fh, tail);
  if (start === undefined) return parsed;
  const before = (await readTail(fh, start)).last;
  if (!before) return undefined;
  const event = parseEventLine(before.text);
  if (typeof event === "string") throw new LogCorruptError(file, await lineNumberAt(file, before.start), event);
  return event;
}
