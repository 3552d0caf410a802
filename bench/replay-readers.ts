import { open } from "node:fs/promises";
import type { SessionStore } from "../src/index.js";

/** Called with each event read; replays are compared doing the same (tiny) work per event. */
export type EventVisitor = (event: { sequence: number }) => void;

/** The library's replay: the streamed `store.read()`. */
export async function replayWithStore(store: SessionStore, sessionId: string, visit: EventVisitor): Promise<void> {
  for await (const event of store.read(sessionId)) visit(event);
}

/**
 * The raw baseline: read 64 KB chunks (the store's chunk size), split at newlines, JSON.parse
 * each line. No validation, no sequence checks, no async iteration per event.
 */
export async function replayRaw(file: string, visit: EventVisitor): Promise<void> {
  const fh = await open(file, "r");
  try {
    const chunk = Buffer.allocUnsafe(64 * 1024);
    let position = 0;
    let carry: Buffer | undefined;
    for (;;) {
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, position);
      if (bytesRead === 0) return;
      position += bytesRead;
      let start = 0;
      for (let nl = chunk.indexOf(0x0a, start); nl !== -1 && nl < bytesRead; nl = chunk.indexOf(0x0a, start)) {
        const text = carry
          ? Buffer.concat([carry, chunk.subarray(start, nl)]).toString("utf8")
          : chunk.toString("utf8", start, nl);
        carry = undefined;
        visit(JSON.parse(text) as { sequence: number });
        start = nl + 1;
      }
      if (start < bytesRead) {
        const rest = Buffer.from(chunk.subarray(start, bytesRead));
        carry = carry ? Buffer.concat([carry, rest]) : rest;
      }
    }
  } finally {
    await fh.close();
  }
}

/** A visitor that counts events and checks they arrive in order, so no replay can skip work. */
export function countingVisitor(): { visit: EventVisitor; result: () => { events: number; lastSequence: number } } {
  let events = 0;
  let lastSequence = 0;
  return {
    visit: (event) => {
      if (event.sequence <= lastSequence)
        throw new Error(`replay out of order: ${event.sequence} after ${lastSequence}`);
      lastSequence = event.sequence;
      events++;
    },
    result: () => ({ events, lastSequence }),
  };
}
