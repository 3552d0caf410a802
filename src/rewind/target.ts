import type { SignalOption, StorageBackend } from "../backend/types.js";
import { InvalidArgumentError, SequenceOutOfRangeError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";
import { assertOnTape } from "../session/sequence-on-tape.js";

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
 * the event just before the call `beforeCallId` names (see {@link beforeCall}). `callerReadsFromTarget`: the
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
      await assertOnTape(backend, sessionId, target.toSequence, lastSequence, signalOnly(options));
    return target.toSequence;
  }
  const found = await beforeCall(backend, sessionId, target.beforeCallId!, lastSequence, options);
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

function signalOnly(options: SignalOption): SignalOption {
  return options.signal ? { signal: options.signal } : {};
}

/** Events in the last window read; each window further back is twice as long. */
const FIRST_WINDOW = 256;

/**
 * The event just before the call: just before its latest `tool_call`, or, when the agent logs none, just
 * before the first checkpoint that names it (0 when that is the tape's first event). Found going back from
 * the end of the tape in windows twice as long each time, each streamed from its first sequence (a read that
 * seeks back from the end): the cost follows the distance from the end to the call, which the rewind then
 * cuts, not the tape's length (issue 16), and memory holds a few numbers, not a window. The look stops at
 * the window holding the call's `tool_call`; a call named only by checkpoints is looked for back to the
 * tape's start. An id several tool calls used means the latest of them (docs/ARCHITECTURE.md, "Conflicts").
 * Undefined when nothing names the call.
 */
async function beforeCall(
  backend: StorageBackend,
  sessionId: string,
  callId: string,
  lastSequence: number,
  options: SignalOption,
): Promise<number | undefined> {
  const signal = options.signal ? { signal: options.signal } : {};
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
