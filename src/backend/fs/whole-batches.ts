import type { LineBatch } from "../../core/envelope.js";
import type { StoredEvent } from "../../core/events.js";

/**
 * How much of a batch a reader holds back before it looks ahead for the batch's end (batch-end.ts): a few
 * thousand events or a few MB of lines, whichever comes first. Below it a batch costs what it always did;
 * past it the reader's memory stays here, however large the batch (an undo putting back 999,999 events).
 */
export const HOLD_EVENTS = 4096;
export const HOLD_CHARS = 8 * 1024 * 1024;

/**
 * Hands out a batch's events (the lines of one `appendMany`, marked `"batch":[first,last]`;
 * docs/ARCHITECTURE.md, "On disk") only once its end is known to be in the log, so a reader never sees part
 * of one: neither a batch still being written nor one whose writer was killed mid-write. At the end of the
 * log an unfinished batch is left out, as a torn line is; the next lock holder cuts it.
 *
 * Memory: a small batch is held until its last line is read. One that outgrows the hold
 * ({@link HOLD_EVENTS}, {@link HOLD_CHARS}) is reported by {@link outgrown}; the reader then looks past it in
 * the file (batch-end.ts) and, when its end is there, calls {@link stream}: what is held goes out and the
 * rest of the batch passes straight through as it is read.
 */
export class WholeBatches {
  private heldBack: StoredEvent[] = [];
  private heldBackChars = 0;
  /** The batch held back or being streamed; undefined between batches. */
  private batch: LineBatch | undefined;
  private streaming = false;

  /** True when the event read can be handed out as it is: no batch is held and its line has no mark (`batch`). */
  passes(batch: LineBatch | undefined): boolean {
    return this.batch === undefined && batch === undefined;
  }

  /** True between batches: nothing held back, nothing being streamed. */
  get idle(): boolean {
    return this.batch === undefined;
  }

  /**
   * Takes the next event read (`batch`: its line's mark; `chars`: its line's length) and adds to `out` what can
   * be handed out now (usually just it).
   */
  take(event: StoredEvent, batch: LineBatch | undefined, chars: number, out: StoredEvent[]): void {
    if (this.batch !== undefined) {
      if (batch?.first === this.batch.first) {
        if (event.sequence >= batch.last) {
          this.release(out);
          out.push(event);
        } else if (this.streaming) out.push(event);
        else {
          this.heldBack.push(event);
          this.heldBackChars += chars;
        }
        return;
      }
      // Something else follows a batch that never reached its last line: a writer that knew no batch
      // marks (an older version) wrote after it, so its lines are in the log for good: hand them out.
      this.release(out);
    }
    if (batch && event.sequence < batch.last) {
      this.batch = batch;
      this.heldBack.push(event);
      this.heldBackChars = chars;
    } else out.push(event);
  }

  /** The batch held back once it holds more than a reader keeps: time to look past it in the file. */
  outgrown(): LineBatch | undefined {
    if (this.streaming || this.batch === undefined) return undefined;
    return this.heldBack.length >= HOLD_EVENTS || this.heldBackChars >= HOLD_CHARS ? this.batch : undefined;
  }

  /**
   * The held batch is released further on in the log (its last line is there, or a line that is not of it):
   * hands out what is held, and from now on the rest of the batch as it is read.
   */
  stream(out: StoredEvent[]): void {
    for (const event of this.heldBack) out.push(event);
    this.heldBack = [];
    this.heldBackChars = 0;
    this.streaming = true;
  }

  /** Hands out whatever is held: for when what follows is damage, not a batch's missing end. */
  flush(out: StoredEvent[]): void {
    this.release(out);
  }

  private release(out: StoredEvent[]): void {
    for (const event of this.heldBack) out.push(event);
    this.heldBack = [];
    this.heldBackChars = 0;
    this.batch = undefined;
    this.streaming = false;
  }
}
