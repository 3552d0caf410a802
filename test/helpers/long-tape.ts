import type { SessionStore } from "../../src/index.js";

/**
 * Appends `count` user messages of `bytes` characters each, `batch` to an appendMany: a long tape, quickly, for
 * the tests whose point is the log's length or its batches, not its events.
 */
export async function appendMessages(
  store: SessionStore,
  id: string,
  count: number,
  { bytes, batch }: { bytes: number; batch: number },
): Promise<void> {
  for (let start = 0; start < count; start += batch)
    await store.appendMany(
      id,
      Array.from({ length: Math.min(batch, count - start) }, (_, k) => ({
        type: "message" as const,
        payload: { role: "user" as const, content: `event ${start + k} `.padEnd(bytes, "z") },
      })),
    );
}
