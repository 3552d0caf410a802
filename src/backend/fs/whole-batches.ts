import { lineBatch } from "../../core/envelope.js";
import type { StoredEvent } from "../../core/events.js";

/**
 * Hands out a batch's events (the lines of one `appendMany`, marked `"batch":[first,last]`;
 * docs/ARCHITECTURE.md, "On disk") only once its last line has been read, so a reader never sees part
 * of one: neither a batch still being written nor one whose writer was killed mid-write. At the end
 * of the log an unfinished batch is left out, as a torn line is; the next lock holder cuts it.
 * Memory: the events of one batch, which its writer held too.
 */
export class WholeBatches {
  private held: StoredEvent[] = [];
  private first = 0;

  /** True when `event` can be handed out as it is: no batch is held and its line has no mark. */
  passes(event: StoredEvent): boolean {
    return this.held.length === 0 && lineBatch(event) === undefined;
  }

  /** Takes the next event read and adds to `out` what can be handed out now (usually just it). */
  take(event: StoredEvent, out: StoredEvent[]): void {
    const batch = lineBatch(event);
    if (this.held.length > 0) {
      if (batch?.first === this.first) {
        this.held.push(event);
        if (event.sequence >= batch.last) this.release(out);
        return;
      }
      // Something else follows a batch that never reached its last line: a writer that knew no batch
      // marks (an older version) wrote after it, so its lines are in the log for good: hand them out.
      this.release(out);
    }
    if (batch && event.sequence < batch.last) {
      this.first = batch.first;
      this.held.push(event);
    } else out.push(event);
  }

  /** Hands out whatever is held: for when what follows is damage, not a batch's missing end. */
  flush(out: StoredEvent[]): void {
    this.release(out);
  }

  private release(out: StoredEvent[]): void {
    for (const event of this.held) out.push(event);
    this.held = [];
  }
}
