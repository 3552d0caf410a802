import type { StoredEvent } from "../core/events.js";
import { InvalidArgumentError } from "../core/errors.js";
import type { AppendOptions } from "./types.js";

/**
 * What every backend checks before an append and the batch bounds its lines carry: sequences must rise past the
 * log's last one, and the lines of several events that stand or fall together carry their batch's bounds, so a
 * crash mid-write leaves lines the next lock holder recognises and cuts (docs/ARCHITECTURE.md, "On disk"). The
 * same bounds on every backend keep a log's bytes the same across them.
 */
export function appendBatch(
  sessionId: string,
  last: number,
  events: readonly StoredEvent[],
  options: AppendOptions,
): { first: number; last: number } | undefined {
  let previous = last;
  for (const event of events) {
    if (!Number.isSafeInteger(event.sequence) || event.sequence <= previous)
      throw new InvalidArgumentError(
        `Event sequence ${event.sequence} does not come after ${previous} in session "${sessionId}".`,
      );
    previous = event.sequence;
  }
  return events.length > 1 && !options.separately
    ? { first: events[0]!.sequence, last: events[events.length - 1]!.sequence }
    : undefined;
}
