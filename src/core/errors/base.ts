// What every agent-tape error shares: the code, the brand that survives a second copy of the package.
// The families of errors are beside this file; ../errors.ts is the one place they are imported from.

// A registered symbol is the same in every copy of the package, so the brand survives duplication.
export const BRAND = Symbol.for("agent-tape.error");

export type AgentTapeErrorCode =
  | "SESSION_NOT_FOUND"
  | "SESSION_EXISTS"
  | "INVALID_SESSION_ID"
  | "INVALID_EVENT"
  | "INVALID_ARGUMENT"
  | "LOG_CORRUPT"
  | "LOCKED"
  | "LOCK_COMPROMISED"
  | "STORE_CLOSED"
  | "BLOB_NOT_FOUND"
  | "BLOB_CORRUPT"
  | "SEQUENCE_OUT_OF_RANGE"
  | "NOTHING_TO_UNDO"
  | "WORKSPACE_MISMATCH"
  | "STORE_TAMPERED"
  | "UNRECOVERABLE_CHANGE"
  | "WORKSPACE_TOO_LARGE"
  | "WORKSPACE_NOT_EMPTY"
  | "FORK_FAILED"
  | "REWIND_CONFLICT"
  | "BEYOND_RETENTION_HORIZON"
  | "SEQUENCE_NOT_ON_TAPE"
  | "REWIND_FAILED"
  | "SEQUENCE_CONFLICT"
  | "STORAGE_FAILED"
  | "EVENT_TOO_LARGE"
  | "TAPE_REWOUND"
  | "WORKSPACE_LOCKED"
  | "PATH_OUTSIDE_WORKSPACE"
  | "STORE_TOO_NEW"
  | "PACKAGE_MISSING";

export abstract class AgentTapeError extends Error {
  abstract readonly code: AgentTapeErrorCode;
  readonly [BRAND] = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
