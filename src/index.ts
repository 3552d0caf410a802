// The public entry of `agent-tape`: explicit named exports only. What is not here is internal.
// Adding or removing a name fails test/api-surface.test.ts until its list is updated on purpose.

export { SessionStore } from "./session/session-store.js";
export type {
  SessionStoreOptions,
  SessionInfo,
  ListOptions,
  CreateOptions,
  ReadOptions,
  ForkOptions,
  SalvageResult,
  WithLockOptions,
  StoreAppendOptions,
  HeldSession,
} from "./session/store-options.js";
export type { PendingRewind } from "./session/recovery.js";

export { CheckpointStore } from "./checkpoint/checkpoint-store.js";
export type {
  CheckpointStoreOptions,
  CaptureInput,
  CheckpointEvent,
  FileStatesEvent,
} from "./checkpoint/checkpoint-store.js";
export { withCheckpoints, checkpointTool } from "./checkpoint/tool-wrapper.js";
export { assertTouchesNameTools } from "./checkpoint/touches-names.js";
export type {
  ToolTouches,
  ToolCallInfo,
  ToolOutcome,
  CheckpointToolOptions,
  ExecutableTool,
} from "./checkpoint/tool-wrapper.js";
export type {
  WorkspaceIndexOptions,
  ScanReport,
  CommandInput,
  CommandInProgress,
  CommandCheckpoint,
} from "./checkpoint/workspace-index/command-capture.js";

export { rewind } from "./rewind/rewind.js";
export type { RewindOptions, RewindReport, ReportedChange } from "./rewind/rewind.js";
export { DIFF_LIMITS } from "./core/file-diff.js";
export type { DiffLimits, DiffTotals } from "./core/file-diff.js";
export type { ConfirmedConflict, OnConflict } from "./rewind/conflicts.js";
export { undoRewind } from "./rewind/undo.js";
export { forkIntoWorkspace } from "./rewind/fork-into-workspace.js";
export type { ForkIntoWorkspaceOptions, ForkIntoWorkspaceReport } from "./rewind/fork-into-workspace.js";
export type { UndoRewindOptions, UndoReport } from "./rewind/undo.js";
export type { RewindStep } from "./rewind/intent.js";

// The session as a person reads it: what each checkpoint changed, and the session as one HTML page.
export { checkpointChanges } from "./view/checkpoint-changes.js";
export type { CheckpointChanges, CheckpointChangesOptions, CheckpointFileChange } from "./view/checkpoint-changes.js";
export { renderSessionPage } from "./view/session-page.js";
export type { SessionPageInput } from "./view/session-page.js";

// Maintenance: what `agent-tape gc` and `agent-tape verify` run, for programs that embed the library.
export { gc } from "./maintenance/gc.js";
export type { GcOptions, GcReport, GcSessionReport, GcFailure } from "./maintenance/gc.js";
export { VERIFY_NEVER_CHECKS, verify } from "./maintenance/verify.js";
export type {
  VerifyOptions,
  VerifyProgress,
  VerifyReport,
  VerifyProblem,
  VerifyProblemKind,
  BlobReference,
} from "./maintenance/verify.js";
export type { ErrorSummary } from "./maintenance/failure.js";
export { repair } from "./maintenance/repair.js";
export type { RepairOptions, RepairReport, RepairIntent } from "./maintenance/repair.js";
export { applyRetention } from "./maintenance/retention.js";
export type {
  RetentionPolicy,
  RetentionOptions,
  RetentionReport,
  RetentionReason,
  RetainedDeletion,
  CheckpointTrim,
} from "./maintenance/retention.js";
export type { RetentionOutcome } from "./core/retention-policy.js";
export { usage } from "./maintenance/usage.js";
export type { SessionUsage } from "./maintenance/usage.js";

// The storage seam and its backends are in `agent-tape/backend` (and `agent-tape/postgres`): src/backend/index.ts.
// Here only the seam's types that the store's own options and results name.
export type { CorruptLine, Durability, LockWait } from "./backend/types.js";

export {
  FORMAT_VERSION,
  builtinEvents,
  MessagePayload,
  ToolCallPayload,
  ToolResultPayload,
  PermissionDecisionPayload,
  UsagePayload,
  ErrorPayload,
  CompactionPayload,
  CheckpointPayload,
  IgnoredChanges,
  FileSnapshot,
  FileState,
  FileStatesPayload,
  RewindPayload,
  RewindMode,
  FileChange,
  FileDiff,
  ForkPayload,
} from "./core/events.js";
export type { StoredEvent, EventSchemas, EventInput, TypedEvent, BuiltinEvents } from "./core/events.js";
export { reappendedCount, reappendedRuns, reappendedSequences } from "./core/reappended.js";
export type { SequenceRun } from "./core/reappended.js";

export { foldConversation } from "./session/conversation.js";
export type { Conversation, ConversationMessage, ConversationToolCall } from "./session/conversation.js";

// A storage backend raises these, so they are values; the rest are types: a caller recognises them with
// isAgentTapeError(error, code), which narrows to the class (no instanceof, which fails across package copies).
export {
  AgentTapeError,
  isAgentTapeError,
  SessionNotFoundError,
  SessionExistsError,
  InvalidSessionIdError,
  InvalidArgumentError,
  LogCorruptError,
  LockedError,
  LockCompromisedError,
  StoreTamperedError,
  StorageFailedError,
  TapeRewoundError,
  StoreTooNewError,
  MissingPackageError,
} from "./core/errors.js";
export type {
  AgentTapeErrorByCode,
  AgentTapeErrorCode,
  RewindConflict,
  InvalidEventError,
  StoreClosedError,
  BlobNotFoundError,
  BlobCorruptError,
  SequenceOutOfRangeError,
  NothingToUndoError,
  WorkspaceMismatchError,
  UnrecoverableChangeError,
  WorkspaceTooLargeError,
  WorkspaceNotEmptyError,
  ForkFailedError,
  RewindConflictError,
  BeyondRetentionHorizonError,
  SequenceNotOnTapeError,
  RewindFailedError,
  SequenceConflictError,
  EventTooLargeError,
  WorkspaceLockedError,
  PathOutsideWorkspaceError,
} from "./core/errors.js";
