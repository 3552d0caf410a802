/**
 * Every error agent-tape throws on purpose is an {@link AgentTapeError} with a stable string
 * `code`. Match on the code with {@link isAgentTapeError}, not on `instanceof`: an app can
 * load both the ESM and the CJS copy of this package, and a class check fails across them.
 * The guard narrows to the class of the code ({@link AgentTapeErrorByCode}), fields and all.
 *
 * The classes live by family in errors/ (one file each); this file is the one place they are imported from.
 */

import { type AgentTapeErrorCode, BRAND } from "./errors/base.js";
import type {
  SessionNotFoundError,
  SessionExistsError,
  InvalidSessionIdError,
  StoreClosedError,
  LockedError,
  LockCompromisedError,
} from "./errors/session.js";
import type {
  InvalidEventError,
  InvalidArgumentError,
  LogCorruptError,
  SequenceOutOfRangeError,
  SequenceNotOnTapeError,
  SequenceConflictError,
  TapeRewoundError,
  EventTooLargeError,
} from "./errors/tape.js";
import type {
  BlobNotFoundError,
  BlobCorruptError,
  StoreTamperedError,
  StorageFailedError,
  StoreTooNewError,
  MissingPackageError,
} from "./errors/storage.js";
import type {
  WorkspaceLockedError,
  WorkspaceMismatchError,
  PathOutsideWorkspaceError,
  WorkspaceTooLargeError,
  WorkspaceNotEmptyError,
  ForkFailedError,
} from "./errors/workspace.js";
import type {
  NothingToUndoError,
  UnrecoverableChangeError,
  RewindConflictError,
  BeyondRetentionHorizonError,
  RewindFailedError,
} from "./errors/rewind.js";

export { type AgentTapeErrorCode, AgentTapeError } from "./errors/base.js";
export {
  SessionNotFoundError,
  SessionExistsError,
  InvalidSessionIdError,
  StoreClosedError,
  LockedError,
  LockCompromisedError,
} from "./errors/session.js";
export {
  InvalidEventError,
  InvalidArgumentError,
  LogCorruptError,
  SequenceOutOfRangeError,
  SequenceNotOnTapeError,
  SequenceConflictError,
  TapeRewoundError,
  EventTooLargeError,
} from "./errors/tape.js";
export {
  BlobNotFoundError,
  BlobCorruptError,
  StoreTamperedError,
  StorageFailedError,
  StoreTooNewError,
  MissingPackageError,
} from "./errors/storage.js";
export {
  WorkspaceLockedError,
  WorkspaceMismatchError,
  PathOutsideWorkspaceError,
  WorkspaceTooLargeError,
  WorkspaceNotEmptyError,
  ForkFailedError,
} from "./errors/workspace.js";
export {
  NothingToUndoError,
  UnrecoverableChangeError,
  type RewindConflict,
  RewindConflictError,
  BeyondRetentionHorizonError,
  RewindFailedError,
} from "./errors/rewind.js";

/**
 * The error class for each code: what {@link isAgentTapeError} narrows to, so a caught error's own fields
 * (`conflicts`, `rolledBack`, `osCode`, …) are in reach without `instanceof` or a cast.
 */
export type AgentTapeErrorByCode = EveryCodeOnce<{
  SESSION_NOT_FOUND: SessionNotFoundError;
  SESSION_EXISTS: SessionExistsError;
  INVALID_SESSION_ID: InvalidSessionIdError;
  INVALID_EVENT: InvalidEventError;
  INVALID_ARGUMENT: InvalidArgumentError;
  LOG_CORRUPT: LogCorruptError;
  LOCKED: LockedError;
  LOCK_COMPROMISED: LockCompromisedError;
  STORE_CLOSED: StoreClosedError;
  BLOB_NOT_FOUND: BlobNotFoundError;
  BLOB_CORRUPT: BlobCorruptError;
  SEQUENCE_OUT_OF_RANGE: SequenceOutOfRangeError;
  NOTHING_TO_UNDO: NothingToUndoError;
  WORKSPACE_MISMATCH: WorkspaceMismatchError;
  STORE_TAMPERED: StoreTamperedError;
  UNRECOVERABLE_CHANGE: UnrecoverableChangeError;
  WORKSPACE_TOO_LARGE: WorkspaceTooLargeError;
  WORKSPACE_NOT_EMPTY: WorkspaceNotEmptyError;
  FORK_FAILED: ForkFailedError;
  REWIND_CONFLICT: RewindConflictError;
  BEYOND_RETENTION_HORIZON: BeyondRetentionHorizonError;
  SEQUENCE_NOT_ON_TAPE: SequenceNotOnTapeError;
  TAPE_REWOUND: TapeRewoundError;
  REWIND_FAILED: RewindFailedError;
  SEQUENCE_CONFLICT: SequenceConflictError;
  EVENT_TOO_LARGE: EventTooLargeError;
  STORAGE_FAILED: StorageFailedError;
  WORKSPACE_LOCKED: WorkspaceLockedError;
  PATH_OUTSIDE_WORKSPACE: PathOutsideWorkspaceError;
  STORE_TOO_NEW: StoreTooNewError;
  PACKAGE_MISSING: MissingPackageError;
}>;

// Fails to compile when a code has no class here, or a class is listed under a code that is not its own.
type EveryCodeOnce<M extends { [C in AgentTapeErrorCode]: { readonly code: C } }> = M;

/**
 * True when `error` is an agent-tape error (optionally with the given code), from any copy of the package.
 * With a code it narrows to that code's class; without one, to the union of them all (a `switch` on `code`
 * then narrows further).
 */
export function isAgentTapeError<C extends AgentTapeErrorCode = AgentTapeErrorCode>(
  error: unknown,
  code?: C,
): error is AgentTapeErrorByCode[C] {
  if (typeof error !== "object" || error === null) return false;
  if ((error as { [BRAND]?: unknown })[BRAND] !== true) return false;
  return code === undefined || (error as { code?: unknown }).code === code;
}
