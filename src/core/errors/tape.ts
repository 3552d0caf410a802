// Errors about the tape: an event refused, a line that does not parse, a sequence not where it was expected.

import { AgentTapeError } from "./base.js";

export class InvalidEventError extends AgentTapeError {
  readonly code = "INVALID_EVENT" as const;
  constructor(
    message: string,
    readonly issues: readonly { path: string; message: string }[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class InvalidArgumentError extends AgentTapeError {
  readonly code = "INVALID_ARGUMENT" as const;
}

export class LogCorruptError extends AgentTapeError {
  readonly code = "LOG_CORRUPT" as const;
  constructor(
    readonly file: string,
    readonly line: number,
    reason: string,
  ) {
    super(
      `${file}:${line}: ${reason}. Nothing was changed. ` +
        `Read what can be saved with store.salvage(), or repair the line by hand.`,
    );
  }
}

export class SequenceOutOfRangeError extends AgentTapeError {
  readonly code = "SEQUENCE_OUT_OF_RANGE" as const;
  constructor(
    readonly sessionId: string,
    readonly sequence: number,
    readonly lastSequence: number,
  ) {
    super(`Sequence ${sequence} is outside session "${sessionId}" (its events run 0..${lastSequence}).`);
  }
}

export class SequenceNotOnTapeError extends AgentTapeError {
  readonly code = "SEQUENCE_NOT_ON_TAPE" as const;
  constructor(
    readonly sessionId: string,
    readonly sequence: number,
    /** The nearest sequence below it that is on the tape (0: the start). */
    readonly before: number,
    /** The nearest one above it, if any. */
    readonly after: number | undefined,
  ) {
    super(
      `Event #${sequence} is no longer on the tape of session "${sessionId}" (cut by a rewind, or put back ` +
        `under a new number by an undo). The nearest events on it are #${before}` +
        `${after === undefined ? "" : ` and #${after}`}; see \`agent-tape show ${sessionId}\`. Nothing was changed.`,
    );
  }
}

export class SequenceConflictError extends AgentTapeError {
  readonly code = "SEQUENCE_CONFLICT" as const;
  constructor(
    readonly sessionId: string,
    readonly expected: number,
    /** The tape's last sequence now. */
    readonly actual: number,
  ) {
    super(
      `Session "${sessionId}" moved on: its last event is #${actual}, not #${expected} as expected ` +
        `(another writer appended, or rewound it). Nothing was written. ` +
        `Read what changed (store.read from #${Math.min(expected, actual) + 1}, or store.conversation), then retry.`,
    );
  }
}

/**
 * A read of the log met a rewind that cut, in place, events this read had already handed out: going on
 * would mix the tape before the rewind with the tape after it. Reading again gives the tape as it is now.
 */
export class TapeRewoundError extends AgentTapeError {
  readonly code = "TAPE_REWOUND" as const;
  constructor(readonly sessionId: string) {
    super(
      `Session "${sessionId}" was rewound while it was being read, cutting events this read had already ` +
        `handed out. Read it again for the tape as it is now.`,
    );
  }
}

/** An event whose line would be longer than the store's `maxEventBytes`: refused before anything is written. */
export class EventTooLargeError extends AgentTapeError {
  readonly code = "EVENT_TOO_LARGE" as const;
  constructor(
    readonly type: string,
    /** The event's line in bytes (its sequence counted at its longest). */
    readonly bytes: number,
    readonly limit: number,
    where = "",
  ) {
    super(
      `The "${type}" event${where} is ${bytes} bytes as a line of the log, over maxEventBytes (${limit}). ` +
        `Nothing was written. Store large content outside the event (a checkpoint blob, a file) and ` +
        `append a reference to it, or raise maxEventBytes on the SessionStore.`,
    );
  }
}
