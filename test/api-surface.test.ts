// The public surface, on purpose: adding, removing or renaming an export fails here with a diff.
// Update the list in the same change, and say why in its message.
import { describe, expect, expectTypeOf, it } from "vitest";
import * as entry from "../src/index.js";
import type { GcReport, HeldSession, LockedSession, SessionStore, VerifyReport } from "../src/index.js";
import * as testingEntry from "../src/testing/index.js";

const RUNTIME_EXPORTS = [
  "AgentTapeError",
  "BeyondRetentionHorizonError",
  "BlobCorruptError",
  "BlobNotFoundError",
  "CheckpointPayload",
  "CheckpointStore",
  "CompactionPayload",
  "DEFAULT_LOCK_STALE_MS",
  "DIFF_LIMITS",
  "ErrorPayload",
  "EventTooLargeError",
  "FORMAT_VERSION",
  "FileChange",
  "FileDiff",
  "FileSnapshot",
  "FileState",
  "FileStatesPayload",
  "ForkFailedError",
  "ForkPayload",
  "InvalidArgumentError",
  "InvalidEventError",
  "InvalidSessionIdError",
  "LockCompromisedError",
  "LockedError",
  "LogCorruptError",
  "MessagePayload",
  "NothingToUndoError",
  "PermissionDecisionPayload",
  "RewindConflictError",
  "RewindFailedError",
  "RewindMode",
  "RewindPayload",
  "SequenceConflictError",
  "SequenceNotOnTapeError",
  "SequenceOutOfRangeError",
  "SessionExistsError",
  "SessionNotFoundError",
  "SessionStore",
  "StorageFailedError",
  "StoreClosedError",
  "StoreTamperedError",
  "ToolCallPayload",
  "ToolResultPayload",
  "UnrecoverableChangeError",
  "UsagePayload",
  "VERIFY_NEVER_CHECKS",
  "WorkspaceMismatchError",
  "WorkspaceNotEmptyError",
  "WorkspaceTooLargeError",
  "applyRetention",
  "builtinEvents",
  "checkpointChanges",
  "checkpointTool",
  "foldConversation",
  "forkIntoWorkspace",
  "fsBackend",
  "gc",
  "isAgentTapeError",
  "memoryBackend",
  "reappendedCount",
  "reappendedRuns",
  "reappendedSequences",
  "renderSessionPage",
  "rewind",
  "undoRewind",
  "usage",
  "verify",
  "withCheckpoints",
];

const TESTING_EXPORTS = [
  "runBackendConformance",
  "runBlobConformance",
  "runLockConformance",
  "runLogConformance",
  "runRecordConformance",
  "runRecoveryConformance",
  "runRewindConformance",
  "runSessionConformance",
];

describe("the public surface", () => {
  it("agent-tape exports exactly these runtime names", async () => {
    expect(Object.keys(await import("../src/index.js")).sort()).toEqual(RUNTIME_EXPORTS);
  });

  it("agent-tape/testing exports exactly these runtime names", async () => {
    expect(Object.keys(await import("../src/testing/index.js")).sort()).toEqual(TESTING_EXPORTS);
  });

  it("keeps the store's internals off its instances: no toEvent, appendLocked or raw lock", () => {
    const store = new entry.SessionStore({ backend: entry.memoryBackend() });
    for (const name of ["toEvent", "appendLocked", "withLockedSession", "appendUnderLock", "eventFor"])
      expect(name in store, name).toBe(false);
    expect(testingEntry.runBackendConformance).toBeTypeOf("function");
  });

  it("types: withLock hands a HeldSession that can append and cannot cut, delete or write records", () => {
    type Fn = Parameters<SessionStore["withLock"]>[1];
    expectTypeOf<Parameters<Fn>[0]>().toEqualTypeOf<HeldSession>();
    expectTypeOf<keyof HeldSession>().toEqualTypeOf<"sessionId" | "lastSequence" | "append" | "appendMany">();
    expectTypeOf<Extract<keyof SessionStore, "toEvent" | "appendLocked">>().toEqualTypeOf<never>();
    // The raw handle stays public for backend authors (the seam), with its options object.
    expectTypeOf<Parameters<LockedSession["append"]>[1]>().toEqualTypeOf<
      { sync?: boolean; separately?: boolean } | undefined
    >();
    expectTypeOf(entry.gc).returns.resolves.toEqualTypeOf<GcReport>();
    expectTypeOf(entry.verify).returns.resolves.toEqualTypeOf<VerifyReport>();
  });
});
