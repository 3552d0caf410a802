export { SessionStore } from "./session-store.js";
export type { SessionStoreOptions, SessionInfo, CreateOptions, ReadOptions, ForkOptions, SalvageResult, WithLockOptions } from "./session-store.js";

export { CheckpointStore } from "./checkpoint-store.js";
export type { CheckpointStoreOptions, CaptureInput, CheckpointEvent } from "./checkpoint-store.js";

export { rewind } from "./rewind/rewind.js";
export type { RewindOptions, RewindReport } from "./rewind/rewind.js";
export { undoRewind } from "./rewind/undo.js";
export type { UndoRewindOptions, UndoReport } from "./rewind/undo.js";
export type { RewindStep } from "./rewind/intent.js";

export { fsBackend, DEFAULT_LOCK_STALE_MS } from "./backend/fs/fs-backend.js";
export type { FsBackendOptions } from "./backend/fs/fs-backend.js";
export { memoryBackend } from "./backend/memory/memory-backend.js";
export type { MemoryBackendOptions } from "./backend/memory/memory-backend.js";
export type {
  StorageBackend,
  LockedSession,
  SessionRecord,
  ReadEventsOptions,
  CorruptLine,
  LockOptions,
  Durability,
  SignalOption,
  CreateSessionOptions,
} from "./backend/types.js";

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
  FileSnapshot,
  RewindPayload,
  RewindMode,
  FileChange,
  ForkPayload,
} from "./events.js";
export type { StoredEvent, EventSchemas, EventInput, TypedEvent, BuiltinEvents } from "./events.js";

export { foldConversation } from "./conversation.js";
export type { Conversation, ConversationMessage, ConversationToolCall } from "./conversation.js";

export { referencedBlobs } from "./references.js";
export { newId } from "./ids.js";

export {
  AgentTapeError,
  isAgentTapeError,
  SessionNotFoundError,
  SessionExistsError,
  InvalidSessionIdError,
  InvalidEventError,
  InvalidArgumentError,
  LogCorruptError,
  LockedError,
  LockCompromisedError,
  StoreClosedError,
  PathOutsideWorkspaceError,
  BlobNotFoundError,
  BlobCorruptError,
  SequenceOutOfRangeError,
  NothingToUndoError,
} from "./errors.js";
export type { AgentTapeErrorCode } from "./errors.js";
