import type { SignalOption, StorageBackend } from "../backend/types.js";
import { InvalidArgumentError, SequenceOutOfRangeError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";
import { assertOnTape, sequenceBeforeCall } from "../session/sequence-on-tape.js";
import { signalOf } from "../core/defined-fields.js";

/** Where a rewind goes: an event by its sequence, or just before a tool call by its id. */
export type RewindTarget = { toSequence?: number; beforeCallId?: string };

/** Checks the target's form before the lock is taken: exactly one of the two, well formed. */
export function checkTargetForm(target: RewindTarget): void {
  const { toSequence, beforeCallId } = target;
  if ((toSequence === undefined) === (beforeCallId === undefined))
    throw new InvalidArgumentError("rewind() needs exactly one of `toSequence` and `beforeCallId`.");
  if (beforeCallId !== undefined && (typeof beforeCallId !== "string" || beforeCallId === ""))
    throw new InvalidArgumentError(`beforeCallId must be a non-empty string, not ${JSON.stringify(beforeCallId)}.`);
  if (toSequence !== undefined && (!Number.isSafeInteger(toSequence) || toSequence < 0))
    throw new InvalidArgumentError(`toSequence must be a non-negative integer, not ${JSON.stringify(toSequence)}.`);
}

/**
 * The sequence to rewind to, with the lock held: `toSequence` if it is on the tape (else
 * SEQUENCE_OUT_OF_RANGE past the end, SEQUENCE_NOT_ON_TAPE for a number cut or re-appended), or
 * the event just before the call `beforeCallId` names (see {@link sequenceBeforeCall}). `callerReadsFromTarget`: the
 * caller reads the log from the target on and checks it there with {@link assertTargetRead} (one read
 * instead of two).
 */
export async function resolveTarget(
  backend: StorageBackend,
  sessionId: string,
  target: RewindTarget,
  lastSequence: number,
  options: SignalOption & { callerReadsFromTarget?: boolean },
): Promise<number> {
  if (target.toSequence !== undefined) {
    if (target.toSequence > lastSequence) throw new SequenceOutOfRangeError(sessionId, target.toSequence, lastSequence);
    if (!options.callerReadsFromTarget)
      await assertOnTape(backend, sessionId, target.toSequence, lastSequence, signalOf(options));
    return target.toSequence;
  }
  const found = await sequenceBeforeCall(backend, sessionId, target.beforeCallId!, lastSequence, options);
  if (found !== undefined) return found;
  throw new InvalidArgumentError(
    `No tool call "${target.beforeCallId}" on the tape of session "${sessionId}" ` +
      `(no tool_call or checkpoint names it): check the id, or rewind with toSequence.`,
  );
}

/**
 * For a caller that reads the log from `target` on (`fromSequence: max(target, 1)`): throws
 * SEQUENCE_NOT_ON_TAPE, naming the target's neighbours, unless the first event it read is the target.
 * Target 0 (the start) is always on the tape.
 */
export async function assertTargetRead(
  backend: StorageBackend,
  sessionId: string,
  target: number,
  first: StoredEvent | undefined,
  lastSequence: number,
  options: SignalOption,
): Promise<void> {
  if (target !== 0 && first?.sequence !== target) await assertOnTape(backend, sessionId, target, lastSequence, options);
}
