import type { StoredEvent } from "../core/events.js";

/**
 * An async iterator over events that arrive in arrays. A hand-written iterator, not an async
 * generator: a generator costs a suspension per event, and two of them stacked cost more than the
 * parsing (bench "replay 1,000,000 events, resume (fresh process)" keeps it near a bare chunked
 * JSON.parse). Here an event
 * already in hand is handed out as a resolved promise; only an empty buffer waits for the next
 * array. `return()` (a `break` out of `for await`) closes the source, so the file is closed too.
 */
export class EventStream<T = StoredEvent> implements AsyncIterableIterator<T> {
  private source: AsyncIterator<StoredEvent[]> | undefined;
  private buffer: StoredEvent[] = [];
  private index = 0;
  private finished = false;

  /**
   * @param open Called on the first `next()`, so errors (a missing session) surface while
   *   iterating, as they would from a generator.
   * @param keep Filters events (by type) before they are handed out.
   */
  constructor(
    private readonly open: () => Promise<AsyncIterable<StoredEvent[]>>,
    private readonly keep?: (event: StoredEvent) => boolean,
  ) {}

  // Set while a refill runs: a next() called before the previous one settled waits its turn, as
  // it would with an async generator, so no two refills ever pull from the source at once.
  private inFlight: Promise<unknown> | undefined;

  next(): Promise<IteratorResult<T>> {
    if (this.inFlight === undefined && this.index < this.buffer.length)
      return Promise.resolve({ value: this.buffer[this.index++] as T, done: false });
    const result = (this.inFlight ?? Promise.resolve()).then(() =>
      this.index < this.buffer.length ? { value: this.buffer[this.index++] as T, done: false } : this.refill(),
    );
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight = settled;
    void settled.then(() => {
      if (this.inFlight === settled) this.inFlight = undefined;
    });
    return result;
  }

  private async refill(): Promise<IteratorResult<T>> {
    if (this.finished) return { value: undefined, done: true };
    try {
      this.source ??= (await this.open())[Symbol.asyncIterator]();
      for (;;) {
        const step = await this.source.next();
        if (step.done) {
          this.finished = true;
          return { value: undefined, done: true };
        }
        this.buffer = this.keep ? step.value.filter(this.keep) : step.value;
        this.index = 0;
        if (this.buffer.length > 0) return { value: this.buffer[this.index++] as T, done: false };
      }
    } catch (error) {
      this.finished = true;
      throw error;
    }
  }

  async return(): Promise<IteratorResult<T>> {
    this.finished = true;
    this.buffer = [];
    await this.source?.return?.();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** Arrays of events from a per-event source, for backends without `readEventBatches`. */
export async function* inBatches(events: AsyncIterable<StoredEvent>, size = 256): AsyncGenerator<StoredEvent[]> {
  let batch: StoredEvent[] = [];
  for await (const event of events) {
    batch.push(event);
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}
