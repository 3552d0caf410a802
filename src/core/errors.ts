/**
 * Every error agent-tape throws on purpose is an {@link AgentTapeError} with a stable string
 * `code`. Match on the code with {@link isAgentTapeError}, not on `instanceof`: an app can
 * load both the ESM and the CJS copy of this package, and a class check fails across them.
 * The guard narrows to the class of the code ({@link AgentTapeErrorByCode}), fields and all.
 *
 * The classes live by family in errors/ (one file each); this file is the one place they are imported from.
 */

import { type AgentTapeErrorCode, BRAND } from "./errors/base.js";
import type * as session from "./errors/session.js";
import type * as tape from "./errors/tape.js";
import type * as storage from "./errors/storage.js";
import type * as workspace from "./errors/workspace.js";
import type * as rewind from "./errors/rewind.js";

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
  SESSION_NOT_FOUND: session.SessionNotFoundError;
  SESSION_EXISTS: session.SessionExistsError;
  INVALID_SESSION_ID: session.InvalidSessionIdError;
  INVALID_EVENT: tape.InvalidEventError;
  INVALID_ARGUMENT: tape.InvalidArgumentError;
  LOG_CORRUPT: tape.LogCorruptError;
  LOCKED: session.LockedError;
  LOCK_COMPROMISED: session.LockCompromisedError;
  STORE_CLOSED: session.StoreClosedError;
  BLOB_NOT_FOUND: storage.BlobNotFoundError;
  BLOB_CORRUPT: storage.BlobCorruptError;
  SEQUENCE_OUT_OF_RANGE: tape.SequenceOutOfRangeError;
  NOTHING_TO_UNDO: rewind.NothingToUndoError;
  WORKSPACE_MISMATCH: workspace.WorkspaceMismatchError;
  STORE_TAMPERED: storage.StoreTamperedError;
  UNRECOVERABLE_CHANGE: rewind.UnrecoverableChangeError;
  WORKSPACE_TOO_LARGE: workspace.WorkspaceTooLargeError;
  WORKSPACE_NOT_EMPTY: workspace.WorkspaceNotEmptyError;
  FORK_FAILED: workspace.ForkFailedError;
  REWIND_CONFLICT: rewind.RewindConflictError;
  BEYOND_RETENTION_HORIZON: rewind.BeyondRetentionHorizonError;
  SEQUENCE_NOT_ON_TAPE: tape.SequenceNotOnTapeError;
  TAPE_REWOUND: tape.TapeRewoundError;
  REWIND_FAILED: rewind.RewindFailedError;
  SEQUENCE_CONFLICT: tape.SequenceConflictError;
  EVENT_TOO_LARGE: tape.EventTooLargeError;
  STORAGE_FAILED: storage.StorageFailedError;
  WORKSPACE_LOCKED: workspace.WorkspaceLockedError;
  PATH_OUTSIDE_WORKSPACE: workspace.PathOutsideWorkspaceError;
  STORE_TOO_NEW: storage.StoreTooNewError;
  PACKAGE_MISSING: storage.MissingPackageError;
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
