import type { SignalOption, StorageBackend } from "../backend/types.js";
import { SequenceNotOnTapeError } from "../core/errors.js";

/**
 * Throws SEQUENCE_NOT_ON_TAPE unless `sequence` is 0 (the start) or an event on the tape: a number
 * cut by a rewind, or re-appended under a new one by an undo, would otherwise silently mean the
 * nearest earlier point. Call with the lock held and `sequence` within 0..`lastSequence`. Reads
 * one event when it is there; the whole tape only to name the neighbours when it is not.
 */
export async function assertOnTape(
  backend: StorageBackend,
  sessionId: string,
  sequence: number,
  lastSequence: number,
  options: SignalOption,
): Promise<void> {
  if (sequence === 0 || sequence === lastSequence) return;
  const signal = options.signal ? { signal: options.signal } : {};
  for await (const event of backend.readEvents(sessionId, { fromSequence: sequence, toSequence: sequence, ...signal }))
    if (event.sequence === sequence) return;
  let before = 0;
  let after: number | undefined;
  for await (const event of backend.readEvents(sessionId, signal)) {
    if (event.sequence < sequence) before = event.sequence;
    else {
      after = event.sequence;
      break;
    }
  }
  throw new SequenceNotOnTapeError(sessionId, sequence, before, after);
}
