import type { SignalOption, StorageBackend } from "../backend/types.js";
import { InvalidArgumentError, SequenceNotOnTapeError, SequenceOutOfRangeError } from "../core/errors.js";
import { signalOf } from "../core/defined-fields.js";

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
  const signal = signalOf(options);
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

/** Where a fork starts: the parent's last event to keep, or just before a tool call by its id. */
export type ForkPoint = { atSequence?: number; beforeCallId?: string };

/** Checks the fork point's form before anything is read or made: at most one of the two, well formed. */
export function checkForkPointForm(point: ForkPoint): void {
  const { atSequence, beforeCallId } = point;
  if (beforeCallId === undefined) return;
  if (atSequence !== undefined)
    throw new InvalidArgumentError("A fork needs at most one of `atSequence` and `beforeCallId`.");
  if (typeof beforeCallId !== "string" || beforeCallId === "")
    throw new InvalidArgumentError(`beforeCallId must be a non-empty string, not ${JSON.stringify(beforeCallId)}.`);
}

/**
 * The parent's last event a fork keeps, with the parent's lock held: `atSequence` if it is on the tape (the
 * last event when neither is given; SEQUENCE_OUT_OF_RANGE past the end, SEQUENCE_NOT_ON_TAPE for a number
 * cut or re-appended), or the event just before the call `beforeCallId` names, as a rewind finds it
 * ({@link sequenceBeforeCall}; INVALID_ARGUMENT when nothing names it). docs/ARCHITECTURE.md, "Conflicts".
 */
export async function resolveForkPoint(
  backend: StorageBackend,
  parentId: string,
  point: ForkPoint,
  lastSequence: number,
  options: SignalOption,
): Promise<number> {
  checkForkPointForm(point);
  if (point.beforeCallId === undefined) {
    const at = point.atSequence ?? lastSequence;
    if (!Number.isSafeInteger(at) || at < 0 || at > lastSequence)
      throw new SequenceOutOfRangeError(parentId, at, lastSequence);
    await assertOnTape(backend, parentId, at, lastSequence, options);
    return at;
  }
  const found = await sequenceBeforeCall(backend, parentId, point.beforeCallId, lastSequence, options);
  if (found !== undefined) return found;
  throw new InvalidArgumentError(
    `No tool call "${point.beforeCallId}" on the tape of session "${parentId}" ` +
      `(no tool_call or checkpoint names it): check the id, or fork with atSequence.`,
  );
}

/** Events in the last window read; each window further back is twice as long. */
const FIRST_WINDOW = 256;

/**
 * The event just before the call: just before its latest `tool_call`, or, when the agent logs none, just
 * before the first checkpoint that names it (0 when that is the tape's first event). Found going back from
 * the end of the tape in windows twice as long each time, each streamed from its first sequence (a read that
 * seeks back from the end): the cost follows the distance from the end to the call, which the rewind then
 * cuts, not the tape's length, and memory holds a few numbers, not a window. The look stops at
 * the window holding the call's `tool_call`; a call named only by checkpoints is looked for back to the
 * tape's start. An id several tool calls used means the latest of them (docs/ARCHITECTURE.md, "Conflicts").
 * Undefined when nothing names the call.
 */
export async function sequenceBeforeCall(
  backend: StorageBackend,
  sessionId: string,
  callId: string,
  lastSequence: number,
  options: SignalOption,
): Promise<number | undefined> {
  const signal = signalOf(options);
  let found: "call" | "checkpoint" | undefined;
  let answer: number | undefined;
  // What was found is a window's first event: the answer is the last event of a window further back (or 0).
  let answerInWindowBefore = false;
  for (let hi = lastSequence, span = FIRST_WINDOW; hi >= 1; span *= 2) {
    const lo = Math.max(1, hi - span + 1);
    // Within the window, forwards: the event before its latest tool_call and before its first checkpoint.
    let previous: number | undefined;
    let call: { before: number | undefined } | undefined;
    let checkpoint: { before: number | undefined } | undefined;
    for await (const event of backend.readEvents(sessionId, { fromSequence: lo, toSequence: hi, ...signal })) {
      if ((event.payload as { callId?: unknown } | undefined)?.callId === callId) {
        if (event.type === "tool_call") call = { before: previous };
        else if (event.type === "session_checkpoint") checkpoint ??= { before: previous };
      }
      previous = event.sequence;
    }
    hi = lo - 1;
    if (answerInWindowBefore && previous !== undefined) {
      answer = previous;
      answerInWindowBefore = false;
      if (found === "call") return answer;
    }
    if (call) {
      if (call.before !== undefined) return call.before;
      found = "call";
      answerInWindowBefore = true;
    } else if (checkpoint) {
      found = "checkpoint";
      answer = checkpoint.before;
      answerInWindowBefore = checkpoint.before === undefined;
    }
  }
  if (found === undefined) return undefined;
  return answerInWindowBefore ? 0 : answer;
}
