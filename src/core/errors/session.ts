// Errors about a session as a whole: its id, whether it exists, its lock, the store being open.

import { AgentTapeError } from "./base.js";

export class SessionNotFoundError extends AgentTapeError {
  readonly code = "SESSION_NOT_FOUND" as const;
  constructor(readonly sessionId: string) {
    super(`Session "${sessionId}" does not exist. Create it with store.create() or check the id and the store root.`);
  }
}

export class SessionExistsError extends AgentTapeError {
  readonly code = "SESSION_EXISTS" as const;
  constructor(readonly sessionId: string) {
    super(`Session "${sessionId}" already exists. Pick another id, or omit it to get a generated one.`);
  }
}

export class InvalidSessionIdError extends AgentTapeError {
  readonly code = "INVALID_SESSION_ID" as const;
  constructor(readonly sessionId: unknown) {
    super(
      `Invalid session id ${JSON.stringify(sessionId)}: use 1-128 characters from A-Z a-z 0-9 . _ -, ` +
        `not starting with "." (no path separators).`,
    );
  }
}

export class StoreClosedError extends AgentTapeError {
  readonly code = "STORE_CLOSED" as const;
  constructor() {
    super("This store is closed. Create a new SessionStore to keep working.");
  }
}

export class LockedError extends AgentTapeError {
  readonly code = "LOCKED" as const;
  constructor(
    readonly sessionId: string,
    readonly waitedMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      `Session "${sessionId}" is locked by another writer; gave up after ${waitedMs} ms. ` +
        `Retry later, or raise lockWaitMs. ` +
        `A lock left by a crashed process is taken over once it is stale (lockStaleMs).`,
      options,
    );
  }
}

export class LockCompromisedError extends AgentTapeError {
  readonly code = "LOCK_COMPROMISED" as const;
  constructor(
    readonly sessionId: string,
    options?: { cause?: unknown },
  ) {
    super(
      `The lock on session "${sessionId}" was lost (taken over as stale, or its lock folder removed), ` +
        `so the last operation may not have finished. ` +
        `Nothing further was written; the next operation takes the lock afresh. ` +
        `If this repeats, the event loop is blocked longer than lockStaleMs.`,
      options,
    );
  }
}
