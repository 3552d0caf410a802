// The public surface, on purpose: adding, removing or renaming an export (a type too) fails here with a diff.
// Update the list in the same change, and say why in its message.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, expectTypeOf, it } from "vitest";
import * as entry from "../src/index.js";
import type { GcReport, HeldSession, SessionStore, VerifyReport } from "../src/index.js";
import type { LockedSession } from "../src/backend/index.js";
import * as backendEntry from "../src/backend/index.js";
import * as testingEntry from "../src/testing/index.js";
import { openStore } from "./helpers/fixture.js";

const RUNTIME_EXPORTS = [
  "AgentTapeError",
  "CheckpointPayload",
  "CheckpointStore",
  "CompactionPayload",
  "DIFF_LIMITS",
  "ErrorPayload",
  "FORMAT_VERSION",
  "FileChange",
  "FileDiff",
  "FileSnapshot",
  "FileState",
  "FileStatesPayload",
  "ForkPayload",
  "IgnoredChanges",
  "InvalidArgumentError",
  "InvalidSessionIdError",
  "LockCompromisedError",
  "LockedError",
  "LogCorruptError",
  "MessagePayload",
  "MissingPackageError",
  "PermissionDecisionPayload",
  "RewindMode",
  "RewindPayload",
  "SessionExistsError",
  "SessionNotFoundError",
  "SessionStore",
  "StorageFailedError",
  "StoreTamperedError",
  "StoreTooNewError",
  "TapeRewoundError",
  "ToolCallPayload",
  "ToolResultPayload",
  "UsagePayload",
  "VERIFY_NEVER_CHECKS",
  "applyRetention",
  "assertTouchesNameTools",
  "builtinEvents",
  "checkpointChanges",
  "checkpointTool",
  "foldConversation",
  "forkIntoWorkspace",
  "gc",
  "isAgentTapeError",
  "reappendedCount",
  "reappendedRuns",
  "reappendedSequences",
  "renderSessionPage",
  "repair",
  "rewind",
  "undoRewind",
  "usage",
  "verify",
  "withCheckpoints",
];

const BACKEND_EXPORTS = ["DEFAULT_LOCK_STALE_MS", "fsBackend", "memoryBackend"];

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

  it("agent-tape/backend exports exactly these runtime names", async () => {
    expect(Object.keys(await import("../src/backend/index.js")).sort()).toEqual(BACKEND_EXPORTS);
  });

  it("agent-tape/testing exports exactly these runtime names", async () => {
    expect(Object.keys(await import("../src/testing/index.js")).sort()).toEqual(TESTING_EXPORTS);
  });

  it("keeps the store's internals off its instances: no toEvent, appendLocked or raw lock", () => {
    const store = openStore({ backend: backendEntry.memoryBackend() });
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

/**
 * Every name an entry file exports, read from its source (no type checker): the type-only exports vanish at
 * run time, so the lists above cannot see them. `export *` is refused: it would export whatever the file
 * it names adds.
 */
function declaredExports(entry: string): string[] {
  const file = fileURLToPath(new URL(`../src/${entry}`, import.meta.url));
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest);
  const names: string[] = [];
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement)) {
      if (!statement.exportClause || !ts.isNamedExports(statement.exportClause))
        throw new Error(`${entry}: "export *" exports whatever its module adds; name each export`);
      for (const element of statement.exportClause.elements) names.push(element.name.text);
      continue;
    }
    const exported = ts.canHaveModifiers(statement)
      ? ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)
      : false;
    if (!exported) continue;
    if (ts.isVariableStatement(statement))
      for (const d of statement.declarationList.declarations) names.push(d.name.getText(source));
    else if ("name" in statement && statement.name) names.push((statement.name as ts.Identifier).text);
  }
  return names.sort();
}

const TYPE_EXPORTS = [
  "AgentTapeErrorByCode",
  "AgentTapeErrorCode",
  "BeyondRetentionHorizonError",
  "BlobCorruptError",
  "BlobNotFoundError",
  "BlobReference",
  "BuiltinEvents",
  "CaptureInput",
  "CheckpointChanges",
  "CheckpointChangesOptions",
  "CheckpointEvent",
  "CheckpointFileChange",
  "CheckpointStoreOptions",
  "CheckpointToolOptions",
  "CheckpointTrim",
  "CommandCheckpoint",
  "CommandInProgress",
  "CommandInput",
  "ConfirmedConflict",
  "Conversation",
  "ConversationMessage",
  "ConversationToolCall",
  "CorruptLine",
  "CreateOptions",
  "DiffLimits",
  "DiffTotals",
  "Durability",
  "ErrorSummary",
  "EventInput",
  "EventSchemas",
  "EventTooLargeError",
  "ExecutableTool",
  "FileStatesEvent",
  "ForkFailedError",
  "ForkIntoWorkspaceOptions",
  "ForkIntoWorkspaceReport",
  "ForkOptions",
  "GcFailure",
  "GcOptions",
  "GcReport",
  "GcSessionReport",
  "HeldSession",
  "InvalidEventError",
  "ListOptions",
  "LockWait",
  "NothingToUndoError",
  "OnConflict",
  "PathOutsideWorkspaceError",
  "PendingRewind",
  "ReadOptions",
  "RepairIntent",
  "RepairOptions",
  "RepairReport",
  "ReportedChange",
  "RetainedDeletion",
  "RetentionOptions",
  "RetentionOutcome",
  "RetentionPolicy",
  "RetentionReason",
  "RetentionReport",
  "RewindConflict",
  "RewindConflictError",
  "RewindFailedError",
  "RewindOptions",
  "RewindReport",
  "RewindStep",
  "SalvageResult",
  "ScanReport",
  "SequenceConflictError",
  "SequenceNotOnTapeError",
  "SequenceOutOfRangeError",
  "SequenceRun",
  "SessionInfo",
  "SessionPageInput",
  "SessionStoreOptions",
  "SessionUsage",
  "StoreAppendOptions",
  "StoreClosedError",
  "StoredEvent",
  "ToolCallInfo",
  "ToolOutcome",
  "ToolTouches",
  "TypedEvent",
  "UndoReport",
  "UndoRewindOptions",
  "UnrecoverableChangeError",
  "VerifyOptions",
  "VerifyProblem",
  "VerifyProblemKind",
  "VerifyProgress",
  "VerifyReport",
  "WithLockOptions",
  "WorkspaceIndexOptions",
  "WorkspaceLockedError",
  "WorkspaceMismatchError",
  "WorkspaceNotEmptyError",
  "WorkspaceTooLargeError",
];

const BACKEND_TYPE_EXPORTS = [
  "AppendOptions",
  "ArchivedLog",
  "BlobDigest",
  "BlobReadOptions",
  "CorruptLine",
  "CreateSessionOptions",
  "Durability",
  "FsBackendOptions",
  "LockOptions",
  "LockWait",
  "LockedSession",
  "MemoryBackendOptions",
  "ReadEventsOptions",
  "RewindFinish",
  "SessionRecord",
  "SignalOption",
  "StorageBackend",
  "StorageUsage",
];

const TESTING_TYPE_EXPORTS = [
  "BackendConformanceOptions",
  "BackendConformanceRun",
  "ConformanceAreaName",
  "CrashLeftState",
  "OptionalMethod",
];

// The adapters' and the PostgreSQL backend's entries, types and values together (importing them would need each
// framework, or `pg`, installed).
const ADAPTER_EXPORTS: Record<string, string[]> = {
  "backend/postgres/index.ts": ["DEFAULT_SCHEMA", "PostgresBackendOptions", "SCHEMA_VERSION", "postgresBackend"],
  "adapters/ai-sdk/index.ts": ["AiSdkTape", "AiSdkTapeOptions", "INTERRUPTED", "aiSdkTape"],
  "adapters/claude-agent-sdk/index.ts": [
    "CLAUDE_TOOL_TOUCHES",
    "CheckpointHooksOptions",
    "ClaudeCheckpointHooks",
    "ClaudeHookCallback",
    "ClaudeSessionEntry",
    "ClaudeSessionKey",
    "ClaudeSessionStoreOptions",
    "ClaudeSessionSummary",
    "ClaudeTapeSessionStore",
    "FoldSessionSummary",
    "claudeEvents",
    "claudeSessionStore",
  ],
  "adapters/openai-agents/index.ts": [
    "INTERRUPTED",
    "OpenAIAgentsTape",
    "OpenAIAgentsTapeOptions",
    "openaiAgentsEvents",
    "openaiAgentsTape",
  ],
};

describe("the public surface: type-only names and the adapters", () => {
  it("agent-tape exports exactly these type-only names", () => {
    const runtime = new Set(Object.keys(entry));
    expect(declaredExports("index.ts").filter((name) => !runtime.has(name))).toEqual(TYPE_EXPORTS);
  });

  it("agent-tape/backend exports exactly these type-only names", () => {
    const runtime = new Set(Object.keys(backendEntry));
    expect(declaredExports("backend/index.ts").filter((name) => !runtime.has(name))).toEqual(BACKEND_TYPE_EXPORTS);
  });

  it("agent-tape/testing exports exactly these type-only names", () => {
    const runtime = new Set(Object.keys(testingEntry));
    expect(declaredExports("testing/index.ts").filter((name) => !runtime.has(name))).toEqual(TESTING_TYPE_EXPORTS);
  });

  it.each(Object.keys(ADAPTER_EXPORTS))("%s exports exactly its listed names", (file) => {
    expect(declaredExports(file)).toEqual(ADAPTER_EXPORTS[file]);
  });
});

describe("error codes", () => {
  // The error classes live by family in src/core/errors/: read them all as one text.
  const errorsSource = ["base", "session", "tape", "storage", "workspace", "rewind"]
    .map((family) => readFileSync(fileURLToPath(new URL(`../src/core/errors/${family}.ts`, import.meta.url)), "utf8"))
    .join("\n");
  const codes = [.../export type AgentTapeErrorCode =([^;]*);/.exec(errorsSource)![1]!.matchAll(/"([A-Z_]+)"/g)]
    .map((m) => m[1]!)
    .sort();
  const classes = [...errorsSource.matchAll(/export class (\w+) extends AgentTapeError \{\s*readonly code = "(\w+)"/g)];

  // A class a backend raises is a value; the others are types, recognised by isAgentTapeError(error, code).
  it("each code has one error class, exported from agent-tape (as a value or a type)", () => {
    expect(classes.map(([, , code]) => code).sort()).toEqual(codes);
    for (const [, name] of classes) expect(declaredExports("index.ts"), name).toContain(name);
  });

  it("each error class is thrown somewhere in src/: a code nothing throws is removed, not documented", () => {
    const sources = readdirSync(fileURLToPath(new URL("../src", import.meta.url)), { recursive: true })
      .map(String)
      .filter((path) => path.endsWith(".ts") && path !== join("core", "errors.ts"))
      .map((path) => readFileSync(fileURLToPath(new URL(`../src/${path}`, import.meta.url)), "utf8"))
      .join("\n");
    const neverThrown = classes.map(([, name]) => name!).filter((name) => !sources.includes(`new ${name}(`));
    expect(neverThrown).toEqual([]);
  });
});
