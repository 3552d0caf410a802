import { InvalidArgumentError, SequenceConflictError } from "../core/errors.js";

/**
 * A rewind or undo decided at one head (a dry run shown to a person, say) must not act on a tape that moved
 * since: what was appended meanwhile would be cut, or undone, unseen. Checked under the session lock, before
 * anything is planned or written.
 */
export function assertExpectedHeadForm(expected: number | undefined): void {
  if (expected !== undefined && (!Number.isSafeInteger(expected) || expected < 0))
    throw new InvalidArgumentError(
      `expectedLastSequence must be a non-negative integer, not ${JSON.stringify(expected)}.`,
    );
}

export function assertExpectedHead(sessionId: string, expected: number | undefined, actual: number): void {
  if (expected !== undefined && expected !== actual) throw new SequenceConflictError(sessionId, expected, actual);
}
