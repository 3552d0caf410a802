// Bounded concurrency for file-system work: libuv has 4 threads, and a few requests in flight
// hide each one's round-trip latency without flooding the pool.
import { sliceIsLong, yieldIfLong } from "./time-slices.js";

/** `fn` over `items` with at most `limit` in flight; results in the order of `items`. */
export async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  await forEachLimited(
    items.map((_, i) => i),
    limit,
    async (i) => {
      results[i] = await fn(items[i]!);
    },
  );
  return results;
}

/**
 * Runs `fn` over `items` with at most `limit` in flight. After a failure no new item starts, and
 * it rejects only once every started one has settled: a caller holding a lock must not go on
 * (or let go of it) while a blob write is still landing.
 */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const workers = Array.from({ length: Math.min(Math.max(1, limit), items.length) }, async () => {
    while (!failed && next < items.length) {
      try {
        await fn(items[next++]!);
      } catch (error) {
        failed = true;
        throw error;
      }
      // Items that finish without waiting for I/O (synchronous writes, cached reads) would chain on
      // without the event loop ever turning. After an item, not before: every worker starts its first at once.
      // Asked first: an await at each item was a promise and a turn of the microtask queue each.
      if (sliceIsLong()) await yieldIfLong();
    }
  });
  const failure = (await Promise.allSettled(workers)).find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failure) throw failure.reason;
}
