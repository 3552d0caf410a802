// The `agent-tape/backend` entry: the storage seam (what a backend implements and what the store asks of it)
// and the two backends that need no peer: `fsBackend` (the default one, for options such as its lock timing)
// and `memoryBackend` (in-process, for tests). `agent-tape/postgres` is the third backend, its own entry so
// that `pg` loads only where it is used. An agent author passes one as `new SessionStore({ backend })`;
// a backend author implements `StorageBackend` and runs the suite from `agent-tape/testing`.
// Adding or removing a name fails test/api-surface.test.ts until its list is updated on purpose.

export { fsBackend, DEFAULT_LOCK_STALE_MS } from "./fs/fs-backend.js";
export type { FsBackendOptions } from "./fs/fs-backend.js";
export { memoryBackend } from "./memory/memory-backend.js";
export type { MemoryBackendOptions } from "./memory/memory-backend.js";
export type {
  StorageBackend,
  LockedSession,
  AppendOptions,
  SessionRecord,
  ReadEventsOptions,
  CorruptLine,
  LockOptions,
  LockWait,
  Durability,
  SignalOption,
  CreateSessionOptions,
  StorageUsage,
  BlobReadOptions,
  BlobDigest,
  ArchivedLog,
  RewindFinish,
} from "./types.js";
