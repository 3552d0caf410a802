import { z } from "zod";

/** Version of the event envelope written to disk. Readers accept this and older versions. */
export const FORMAT_VERSION = 1 as const;

/**
 * One line of the tape. `sequence` starts at 1, is strictly increasing and never reused;
 * `payload` is whatever the event type's schema produced when it was appended.
 */
export interface StoredEvent<T extends string = string, P = unknown> {
  v: number;
  id: string;
  sessionId: string;
  sequence: number;
  type: T;
  createdAt: string;
  payload: P;
}

// ---- built-in event payloads ---------------------------------------------------------------
// Schemas are `loose`: agents attach provider-specific fields, and dropping them would lose data.

export const MessagePayload = z
  .object({
    role: z.enum(["system", "user", "assistant"]),
    content: z.union([z.string(), z.array(z.unknown())]),
    id: z.string().optional(),
  })
  .loose();
export type MessagePayload = z.infer<typeof MessagePayload>;

export const ToolCallPayload = z
  .object({ callId: z.string().min(1), name: z.string().min(1), input: z.unknown() })
  .loose();
export type ToolCallPayload = z.infer<typeof ToolCallPayload>;

export const ToolResultPayload = z
  .object({ callId: z.string().min(1), output: z.unknown(), isError: z.boolean().optional() })
  .loose();
export type ToolResultPayload = z.infer<typeof ToolResultPayload>;

export const PermissionDecisionPayload = z
  .object({
    tool: z.string().min(1),
    decision: z.enum(["allow", "deny", "ask"]),
    callId: z.string().optional(),
    reason: z.string().optional(),
  })
  .loose();
export type PermissionDecisionPayload = z.infer<typeof PermissionDecisionPayload>;

export const UsagePayload = z
  .object({
    model: z.string().optional(),
    inputTokens: z.number().int().nonnegative().optional(),
    outputTokens: z.number().int().nonnegative().optional(),
    costUsd: z.number().nonnegative().optional(),
  })
  .loose();
export type UsagePayload = z.infer<typeof UsagePayload>;

export const ErrorPayload = z
  .object({ message: z.string(), code: z.string().optional(), callId: z.string().optional() })
  .loose();
export type ErrorPayload = z.infer<typeof ErrorPayload>;

/** The model's context was summarised: events up to `throughSequence` are replaced by `summary`. */
export const CompactionPayload = z
  .object({ summary: z.string(), throughSequence: z.number().int().nonnegative() })
  .loose();
export type CompactionPayload = z.infer<typeof CompactionPayload>;

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, "a lowercase hex sha256");

/** What a file was just before a tool touched it. Exactly one record per path. */
/**
 * The owner and group an entry had (numeric ids), recorded so a rewind can put them back where the process may
 * (root, or its own files). Absent on tapes written before they were recorded: the restore then keeps the owner
 * of the name it replaces (docs/ARCHITECTURE.md, "Workspace index").
 */
const Owner = {
  uid: z.number().int().nonnegative().optional(),
  gid: z.number().int().nonnegative().optional(),
};

export const FileSnapshot = z.discriminatedUnion("kind", [
  z.object({
    path: z.string(),
    kind: z.literal("blob"),
    blob: Sha256,
    bytes: z.number().int().nonnegative(),
    mode: z.number().int().nonnegative(),
    ...Owner,
  }),
  z.object({ path: z.string(), kind: z.literal("absent") }),
  z.object({ path: z.string(), kind: z.literal("symlink"), target: z.string(), ...Owner }),
  z.object({
    path: z.string(),
    kind: z.literal("directory"),
    mode: z.number().int().nonnegative(),
    ...Owner,
    /**
     * True when the same checkpoint lists everything that was below the folder (a folder captured whole,
     * within its budget): a rewind to before it removes what it did not list. Absent on other folder
     * records (and on tapes written before this field), which say nothing about the folder's contents.
     */
    complete: z.boolean().optional(),
  }),
  z.object({
    path: z.string(),
    kind: z.literal("skipped"),
    reason: z.enum(["too_large", "unreadable", "outside_workspace", "not_a_regular_file", "over_budget"]),
    detail: z.string().optional(),
  }),
]);
export type FileSnapshot = z.infer<typeof FileSnapshot>;

/**
 * What a shell command did to content the workspace index ignores (`.gitignore`, `.git`, the caller's patterns):
 * never stored, so it cannot be rewound, only named. `paths` is bounded (the first in path order); `count` is all.
 * A removed ignored folder is one path (what was below it was never listed).
 */
export const IgnoredChanges = z.object({
  count: z.number().int().nonnegative(),
  paths: z.array(z.object({ path: z.string(), change: z.enum(["removed", "changed"]) })),
});
export type IgnoredChanges = z.infer<typeof IgnoredChanges>;

export const CheckpointPayload = z.object({
  tool: z.string().min(1),
  callId: z.string().optional(),
  /** Absolute real path the `files` paths are relative to. */
  workspace: z.string(),
  files: z.array(FileSnapshot),
  /** A command's checkpoint: ignored content it removed or changed, which no rewind can put back. */
  ignoredChanges: IgnoredChanges.optional(),
});
export type CheckpointPayload = z.infer<typeof CheckpointPayload>;

/**
 * What a path was right after agent-tape (a tool run through `around`, or a rewind) left it: the
 * content's sha256, not the bytes, so recording it costs one hash and no blob write. `unknown` when it
 * could not be read; a rewind then has nothing to check that path against.
 */
export const FileState = z.discriminatedUnion("kind", [
  z.object({ path: z.string(), kind: z.literal("file"), sha256: Sha256, mode: z.number().int().nonnegative() }),
  z.object({ path: z.string(), kind: z.literal("absent") }),
  z.object({ path: z.string(), kind: z.literal("symlink"), target: z.string() }),
  z.object({
    path: z.string(),
    kind: z.literal("directory"),
    mode: z.number().int().nonnegative(),
    /**
     * false: entries may lie below it that were not recorded (the shell capture leaves out what the
     * workspace index ignores), so one never recorded there is not taken as made since. @default true
     */
    complete: z.boolean().optional(),
  }),
  z.object({ path: z.string(), kind: z.literal("unknown"), reason: z.string() }),
]);
export type FileState = z.infer<typeof FileState>;

/** The after-state of a tool call: each path it may have touched, as it was once the tool finished. */
export const FileStatesPayload = z
  .object({
    tool: z.string().optional(),
    callId: z.string().optional(),
    /** Absolute real path the `files` paths are relative to. */
    workspace: z.string(),
    files: z.array(FileState),
  })
  .loose();
export type FileStatesPayload = z.infer<typeof FileStatesPayload>;

export const RewindMode = z.enum(["all", "files", "conversation"]);
export type RewindMode = z.infer<typeof RewindMode>;

/**
 * How much a file changes: lines inserted and deleted for text, or for a file too large or binary for
 * a line diff, its bytes (the whole file in, the whole file out), with `reason` saying why.
 */
export const FileDiff = z.object({
  unit: z.enum(["lines", "bytes"]),
  insertions: z.number().int().nonnegative(),
  deletions: z.number().int().nonnegative(),
  /** Why bytes and not lines: "binary", "too_large", "too_many_changes", "over_budget". */
  reason: z.string().optional(),
});
export type FileDiff = z.infer<typeof FileDiff>;

export const FileChange = z.object({
  path: z.string(),
  action: z.enum(["restore", "delete", "skip"]),
  reason: z.string().optional(),
  /** For a restore or delete of a regular file: what it does to the file as it is now. */
  diff: FileDiff.optional(),
  /**
   * What this change overwrites or deletes that no undo can bring back: paths at or below it whose
   * current content was not kept (over maxFileBytes, unreadable, a folder past its budget), each with
   * the reason it was not. Absent when everything is kept.
   */
  unrecoverable: z.array(z.object({ path: z.string(), reason: z.string(), detail: z.string().optional() })).optional(),
});
export type FileChange = z.infer<typeof FileChange>;

/** A stretch of consecutive sequences, `[first, last]`, both included (an undo marker's `reappendedRanges`). */
const SequenceRun = z
  .tuple([z.number().int().positive(), z.number().int().positive()])
  .refine(([first, last]) => first <= last, "a run's first sequence must not be past its last");

function runsInOrder(runs: readonly (readonly [number, number])[]): boolean {
  for (let i = 1; i < runs.length; i++) if (runs[i]![0] <= runs[i - 1]![1]) return false;
  return true;
}

export const RewindPayload = z
  .object({
    targetSequence: z.number().int().nonnegative(),
    mode: RewindMode,
    /** Set when this marker records an undo of an earlier rewind rather than a rewind. */
    undoOf: z.number().int().positive().optional(),
    filesRestored: z.number().int().nonnegative(),
    filesDeleted: z.number().int().nonnegative(),
    skipped: z.array(z.string()),
    changes: z.array(FileChange),
    eventsRemoved: z.number().int().nonnegative(),
    blobsPruned: z.number().int().nonnegative(),
    /**
     * On an undo marker: the sequences the re-appended events had before the rewind removed them, as runs
     * `[first, last]` (both included), in order and apart. One run, unless the cut held an earlier rewind's
     * marker (its number jumps past the events that rewind cut). Its size follows those gaps, not the events.
     * `reappendedCount` and `reappendedSequences` read it, and `reappendedFrom` on older markers.
     */
    reappendedRanges: z
      .array(SequenceRun)
      .refine(runsInOrder, "runs must be in increasing order and must not overlap")
      .optional(),
    /**
     * The older form of `reappendedRanges`: every former sequence, one number per event put back. Written by
     * versions before the runs (on an undo marker with no `reappendedRanges`), read still, no longer written.
     */
    reappendedFrom: z.array(z.number().int().positive()).optional(),
    /** Before-snapshot of every path the rewind changed, so `undoRewind` can put it back. */
    undo: z
      .object({
        workspace: z.string(),
        files: z.array(FileSnapshot),
        /** The archive record keeping the events the rewind cut (absent with keepUndo 0 or none cut). */
        archive: z.string().optional(),
        /** What that archive's copy of the cut log bytes must be: their length, sha256 and line count. */
        archiveLog: z
          .object({ bytes: z.number().int().nonnegative(), sha256: z.string(), events: z.number().int().nonnegative() })
          .optional(),
      })
      .optional(),
    /** What the rewind left each path it changed as: the next rewind checks the workspace against it. */
    wrote: z.object({ workspace: z.string(), files: z.array(FileState) }).optional(),
  })
  .loose();
export type RewindPayload = z.infer<typeof RewindPayload>;

export const ForkPayload = z.object({
  parentId: z.string(),
  atSequence: z.number().int().nonnegative(),
  /**
   * Set on a fork made into its own folder (`forkIntoWorkspace`): that folder's real path. The copied events
   * that named the parent's workspace name this one instead (docs/ARCHITECTURE.md, "Forks").
   */
  workspace: z.string().optional(),
});
export type ForkPayload = z.infer<typeof ForkPayload>;

/** The built-in event types and their payload schemas. */
export const builtinEvents = {
  message: MessagePayload,
  tool_call: ToolCallPayload,
  tool_result: ToolResultPayload,
  permission_decision: PermissionDecisionPayload,
  usage: UsagePayload,
  error: ErrorPayload,
  compaction: CompactionPayload,
  session_checkpoint: CheckpointPayload,
  session_rewind: RewindPayload,
  session_fork: ForkPayload,
  session_file_states: FileStatesPayload,
} as const;
export type BuiltinEvents = typeof builtinEvents;

/** A map of event type to the zod schema of its payload. */
export type EventSchemas = Record<string, z.ZodType>;

/** What `append` takes for each type of an event map: `{ type, payload }` with the schema's input type. */
export type EventInput<E extends EventSchemas> = {
  [K in keyof E & string]: { type: K; payload: z.input<E[K]> };
}[keyof E & string];

/** A stored event of one of the map's types, its payload typed by the schema's output. */
export type TypedEvent<E extends EventSchemas> = {
  [K in keyof E & string]: StoredEvent<K, z.output<E[K]>>;
}[keyof E & string];
