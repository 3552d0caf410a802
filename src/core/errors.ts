/**
 * Every error agent-tape throws on purpose is an {@link AgentTapeError} with a stable string
 * `code`. Match on the code with {@link isAgentTapeError}, not on `instanceof`: an app can
 * load both the ESM and the CJS copy of this package, and a class check fails across them.
 * The guard narrows to the class of the code ({@link AgentTapeErrorByCode}), fields and all.
 */

import type { FileState } from "./events.js";

// A registered symbol is the same in every copy of the package, so the brand survives duplication.
const BRAND = Symbol.for("agent-tape.error");

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

export class InvalidEventError extends AgentTapeError {
  readonly code = "INVALID_EVENT" as const;
  constructor(
    message: string,
    readonly issues: readonly { path: string; message: string }[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class InvalidArgumentError extends AgentTapeError {
  readonly code = "INVALID_ARGUMENT" as const;
}

export class LogCorruptError extends AgentTapeError {
  readonly code = "LOG_CORRUPT" as const;
  constructor(
    readonly file: string,
    readonly line: number,
    reason: string,
  ) {
    super(
      `${file}:${line}: ${reason}. Nothing was changed. ` +
        `Read what can be saved with store.salvage(), or repair the line by hand.`,
    );
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

/**
 * Another rewind or undo (of another session, maybe in another process) was changing the same workspace
 * for longer than the wait (docs/ARCHITECTURE.md, "Workspace lock"). Nothing was changed.
 */
export class WorkspaceLockedError extends AgentTapeError {
  readonly code = "WORKSPACE_LOCKED" as const;
  constructor(
    readonly workspace: string,
    readonly waitedMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      `The workspace "${workspace}" is being rewound or undone by another session (or process); gave up ` +
        `after ${waitedMs} ms, changing nothing. Retry later, or raise lockWaitMs. A lock left by a crashed ` +
        `process is taken over once it is stale (lockStaleMs).`,
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

export class StoreClosedError extends AgentTapeError {
  readonly code = "STORE_CLOSED" as const;
  constructor() {
    super("This store is closed. Create a new SessionStore to keep working.");
  }
}

export class BlobNotFoundError extends AgentTapeError {
  readonly code = "BLOB_NOT_FOUND" as const;
  constructor(
    readonly sessionId: string,
    readonly hash: string,
  ) {
    super(`Blob ${hash} is not stored in session "${sessionId}". It may have been pruned, or the hash is wrong.`);
  }
}

export class BlobCorruptError extends AgentTapeError {
  readonly code = "BLOB_CORRUPT" as const;
  /**
   * @param actual the sha256 of the bytes read: of their first `recordedBytes + 1` when the blob is longer
   *   than its snapshot recorded (a reader stops there: a compression bomb is not inflated to hash it whole).
   * @param recordedBytes the length its snapshot recorded, when the blob's is another.
   */
  constructor(
    readonly sessionId: string,
    readonly hash: string,
    readonly actual: string,
    readonly recordedBytes?: number,
  ) {
    super(
      `Blob ${hash} in session "${sessionId}" no longer matches its name (${
        recordedBytes === undefined
          ? `its bytes hash to ${actual}`
          : `it does not hold the ${recordedBytes} bytes its snapshot recorded`
      }); ` +
        `refusing to use it. ` +
        `Run \`agent-tape verify ${sessionId}\` to list every damaged blob.`,
    );
  }
}

export class SequenceOutOfRangeError extends AgentTapeError {
  readonly code = "SEQUENCE_OUT_OF_RANGE" as const;
  constructor(
    readonly sessionId: string,
    readonly sequence: number,
    readonly lastSequence: number,
  ) {
    super(`Sequence ${sequence} is outside session "${sessionId}" (its events run 0..${lastSequence}).`);
  }
}

export class NothingToUndoError extends AgentTapeError {
  readonly code = "NOTHING_TO_UNDO" as const;
  constructor(
    readonly sessionId: string,
    reason: string,
  ) {
    super(`Nothing to undo in session "${sessionId}": ${reason}.`);
  }
}

export class WorkspaceMismatchError extends AgentTapeError {
  readonly code = "WORKSPACE_MISMATCH" as const;
  constructor(
    readonly sessionId: string,
    readonly recorded: readonly string[],
    readonly named: string,
    /** What was refused: writing files back (a rewind, an undo, a fork) or taking snapshots (a capture). */
    readonly refused: "write" | "capture" = "write",
  ) {
    super(
      `Session "${sessionId}" recorded its files in ${recorded.map((w) => `"${w}"`).join(" and ")}, ` +
        `but its session.json names "${named}". ` +
        (refused === "write"
          ? "Refusing to write into a folder the tape did not record; nothing was changed. "
          : "Refusing to take snapshots in a folder the tape did not record; nothing was recorded. ") +
        `If the workspace moved, pass \`workspace\` explicitly; otherwise session.json was edited.`,
    );
  }
}

/**
 * A tool call named paths that lead outside the workspace or name no file, and was refused before the tool ran
 * (the tool wrapper's default, `outsidePaths: "refuse"`). Its message is written for the model that made the
 * call: it names each path and why, so the model can call again with a path inside.
 */
export class PathOutsideWorkspaceError extends AgentTapeError {
  readonly code = "PATH_OUTSIDE_WORKSPACE" as const;
  constructor(
    readonly tool: string,
    readonly workspace: string,
    /** Each refused path as the call named it, and why. */
    readonly refused: readonly { path: string; why: string }[],
  ) {
    super(
      `Tool "${tool}" was not run: ${refused.map((r) => `the path ${JSON.stringify(r.path)} ${r.why}`).join("; ")}. ` +
        `Only paths inside the workspace "${workspace}" can be changed (and rewound); name a file inside it.`,
    );
  }
}

export class StoreTamperedError extends AgentTapeError {
  readonly code = "STORE_TAMPERED" as const;
  /** @param options.remedy what the person can do, in place of the default pointer at `agent-tape verify`. */
  constructor(
    readonly sessionId: string,
    readonly what: string,
    options?: { cause?: unknown; remedy?: string },
  ) {
    super(
      `Session "${sessionId}" was changed by hand or by another program: ${what}. ` +
        "Refusing to use it; nothing was changed. " +
        (options?.remedy ?? `Run \`agent-tape verify ${sessionId}\` to see what else is wrong.`),
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
  }
}

export class UnrecoverableChangeError extends AgentTapeError {
  readonly code = "UNRECOVERABLE_CHANGE" as const;
  constructor(
    readonly sessionId: string,
    readonly paths: readonly string[],
  ) {
    const shown = paths.slice(0, 5).join(", ") + (paths.length > 5 ? `, and ${paths.length - 5} more` : "");
    super(
      `Rewinding session "${sessionId}" would overwrite or delete ${paths.length} path(s) with no copy kept ` +
        `for undo (over maxFileBytes, unreadable, or a folder not captured in full): ${shown}. ` +
        `Nothing was changed. Pass allowUnrecoverable: true (CLI: --allow-unrecoverable) to go ahead, ` +
        `or see them with a dry run.`,
    );
  }
}

/**
 * A workspace scan stopped before storing anything: the tracked tree is over `maxFiles` or
 * `maxBytes`, so the folder is probably not the project (a home folder, `/`) or needs ignore rules.
 */
export class WorkspaceTooLargeError extends AgentTapeError {
  readonly code = "WORKSPACE_TOO_LARGE" as const;
  constructor(
    readonly workspace: string,
    /** Entries (files, folders, links) counted before the scan stopped. */
    readonly files: number,
    /** Bytes of the files counted before the scan stopped. */
    readonly bytes: number,
    readonly limits: { maxFiles: number; maxBytes: number },
  ) {
    const over =
      files > limits.maxFiles
        ? `more than maxFiles ${limits.maxFiles} entries (counted ${files} before stopping)`
        : `more than maxBytes ${limits.maxBytes} bytes (counted ${bytes} bytes in ${files} entries before stopping)`;
    super(
      `Workspace "${workspace}" holds ${over}; nothing was stored. ` +
        `Check that it is the project folder, ignore what need not be rewound (.gitignore or ` +
        `workspaceIndex.ignore, e.g. "node_modules/"), or raise workspaceIndex.maxFiles / maxBytes.`,
    );
  }
}

/**
 * A fork into its own folder was given a folder that already holds something: the fork would mix its files
 * with what is there, and a failed fork could not tell its own files from those. Nothing was written.
 */
export class WorkspaceNotEmptyError extends AgentTapeError {
  readonly code = "WORKSPACE_NOT_EMPTY" as const;
  constructor(
    readonly workspace: string,
    /** A few of the names found in it. */
    readonly found: readonly string[],
  ) {
    const shown = found.slice(0, 3).map((name) => `"${name}"`);
    if (found.length > 3) shown.push("…");
    super(
      `Cannot fork into "${workspace}": it is not empty (it holds ${shown.join(", ")}). ` +
        `Nothing was written. Name a new folder (it is created) or an empty one.`,
    );
  }
}

/**
 * A fork into its own folder failed while filling that folder (a full disk, a file it may not write): what it
 * wrote there was removed and no session was made. `osCode` is the OS's code and `cause` the OS error.
 */
export class ForkFailedError extends AgentTapeError {
  readonly code = "FORK_FAILED" as const;
  readonly osCode: string;
  constructor(
    readonly sessionId: string,
    readonly workspace: string,
    error: unknown,
  ) {
    const osCode = (error as NodeJS.ErrnoException)?.code ?? "EUNKNOWN";
    super(
      `Forking session "${sessionId}" into "${workspace}" failed while writing its files ` +
        `(${osCode}: ${(error as Error)?.message ?? String(error)}). What the fork wrote there was removed and ` +
        `no session was made; fix the cause (disk space, permissions) and fork again.`,
      { cause: error },
    );
    this.osCode = osCode;
  }
}

/**
 * One path a rewind would change that was changed outside this session since the tape last recorded
 * leaving it (by hand, by another session, by another process). docs/ARCHITECTURE.md, "Conflicts".
 */
export interface RewindConflict {
  path: string;
  /** In words: "modified", "deleted", "created", "mode changed", "replaced by a directory", … */
  change: string;
  /** What the tape last recorded the path as. */
  expected: FileState;
  /** What it is now. */
  actual: FileState;
  /** What the rewind did about it: refused (the default), skipped the path, or overwrote it. */
  resolution: "refuse" | "skip" | "overwrite";
}

export class RewindConflictError extends AgentTapeError {
  readonly code = "REWIND_CONFLICT" as const;
  constructor(
    readonly sessionId: string,
    readonly conflicts: readonly RewindConflict[],
  ) {
    const shown = conflicts.slice(0, 10).map((c) => `${c.path} (${c.change})`);
    if (conflicts.length > 10) shown.push(`and ${conflicts.length - 10} more`);
    super(
      `Rewinding session "${sessionId}" would overwrite changes made outside it since it last wrote these paths: ` +
        `${shown.join(", ")}. Nothing was changed. ` +
        `Pass onConflict: "skip" to leave them as they are, or "overwrite" (their current bytes go into the undo).`,
    );
  }
}

/**
 * A rewind of files to a point before the retention horizon: retention dropped the checkpoints
 * through `horizon` (their blobs are gone), so the files cannot be put back as they were.
 * docs/ARCHITECTURE.md, "Retention".
 */
export class BeyondRetentionHorizonError extends AgentTapeError {
  readonly code = "BEYOND_RETENTION_HORIZON" as const;
  constructor(
    readonly sessionId: string,
    readonly toSequence: number,
    readonly horizon: number,
  ) {
    super(
      `Cannot rewind the files of session "${sessionId}" to event ${toSequence}: retention dropped the ` +
        `checkpoints through event ${horizon}, so the files as they were then are no longer stored. ` +
        `Nothing was changed. Rewind to event ${horizon} or later, or rewind only the conversation ` +
        `(mode "conversation").`,
    );
  }
}

export class SequenceNotOnTapeError extends AgentTapeError {
  readonly code = "SEQUENCE_NOT_ON_TAPE" as const;
  constructor(
    readonly sessionId: string,
    readonly sequence: number,
    /** The nearest sequence below it that is on the tape (0: the start). */
    readonly before: number,
    /** The nearest one above it, if any. */
    readonly after: number | undefined,
  ) {
    super(
      `Event #${sequence} is no longer on the tape of session "${sessionId}" (cut by a rewind, or put back ` +
        `under a new number by an undo). The nearest events on it are #${before}` +
        `${after === undefined ? "" : ` and #${after}`}; see \`agent-tape show ${sessionId}\`. Nothing was changed.`,
    );
  }
}

/**
 * A read of the log met a rewind that cut, in place, events this read had already handed out: going on
 * would mix the tape before the rewind with the tape after it. Reading again gives the tape as it is now.
 */
export class TapeRewoundError extends AgentTapeError {
  readonly code = "TAPE_REWOUND" as const;
  constructor(readonly sessionId: string) {
    super(
      `Session "${sessionId}" was rewound while it was being read, cutting events this read had already ` +
        `handed out. Read it again for the tape as it is now.`,
    );
  }
}

export class RewindFailedError extends AgentTapeError {
  readonly code = "REWIND_FAILED" as const;
  constructor(
    readonly sessionId: string,
    /** True when the session is back exactly as it was before the rewind; false when the rewind is still pending. */
    readonly rolledBack: boolean,
    options: { cause?: unknown; reason?: string } = {},
  ) {
    const why = options.reason ?? (options.cause instanceof Error ? options.cause.message : String(options.cause));
    super(
      rolledBack
        ? `The rewind of session "${sessionId}" failed (${why}) and was rolled back: the files, the log and ` +
            `the blobs are as they were before it. Fix the cause and rewind again.`
        : `The rewind of session "${sessionId}" failed (${why}) and could not be rolled back: it stays pending. ` +
            `Readers report it and read the tape as it is on disk; the next writer (in any process) puts it right ` +
            `when it takes the lock (rolled back, or finished if the log was already cut), and fails like this ` +
            `until the cause is fixed (permissions, disk space, what is in the way in the workspace).`,
      { cause: options.cause },
    );
  }
}

export class SequenceConflictError extends AgentTapeError {
  readonly code = "SEQUENCE_CONFLICT" as const;
  constructor(
    readonly sessionId: string,
    readonly expected: number,
    /** The tape's last sequence now. */
    readonly actual: number,
  ) {
    super(
      `Session "${sessionId}" moved on: its last event is #${actual}, not #${expected} as expected ` +
        `(another writer appended, or rewound it). Nothing was written. ` +
        `Read what changed (store.read from #${Math.min(expected, actual) + 1}, or store.conversation), then retry.`,
    );
  }
}

/** An event whose line would be longer than the store's `maxEventBytes`: refused before anything is written. */
export class EventTooLargeError extends AgentTapeError {
  readonly code = "EVENT_TOO_LARGE" as const;
  constructor(
    readonly type: string,
    /** The event's line in bytes (its sequence counted at its longest). */
    readonly bytes: number,
    readonly limit: number,
    where = "",
  ) {
    super(
      `The "${type}" event${where} is ${bytes} bytes as a line of the log, over maxEventBytes (${limit}). ` +
        `Nothing was written. Store large content outside the event (a checkpoint blob, a file) and ` +
        `append a reference to it, or raise maxEventBytes on the SessionStore.`,
    );
  }
}

/** What to do about each OS error a store call can meet, in the user's words. */
const STORAGE_ADVICE: Record<string, string> = {
  ENOSPC: "the disk is full: free space and retry",
  EDQUOT: "the disk quota is used up: free space and retry",
  EROFS: "the file system is read-only: store sessions on a writable one (the store's root)",
  EMFILE: "this process has too many files open: close some, or raise its limit (ulimit -n)",
  ENFILE: "the system has too many files open: retry when fewer are",
  EACCES: "permission denied: check the owner and mode of the store's folders",
  EPERM: "operation not permitted: check the owner, mode and flags (chattr) of the store's folders",
  EISDIR: "a folder is where the store keeps a file: move it away",
  ENOTDIR: "a file is where the store keeps a folder (the root, a session or a blob shard): move it away",
  EEXIST: "something is in the way where the store makes a folder or file: move it away",
  EIO: "the disk reported an I/O error: check it",
};

/**
 * The storage refused an operation (disk full, read-only, too many open files, a file where a folder
 * belongs, …). `osCode` is the OS's code (`ENOSPC`) and `cause` the OS error; nothing was acknowledged
 * that is not stored.
 */
export class StorageFailedError extends AgentTapeError {
  readonly code = "STORAGE_FAILED" as const;
  /** The OS error code, e.g. "ENOSPC", "EROFS", "EMFILE", "EISDIR", "ENOTDIR". */
  readonly osCode: string;
  constructor(error: NodeJS.ErrnoException, osCode = error.code ?? "EUNKNOWN") {
    const where = error.path === undefined ? "" : ` on ${error.path}`;
    super(
      `The store could not ${error.syscall ?? "use the disk"}${where} (${osCode}): ` +
        `${STORAGE_ADVICE[osCode] ?? error.message}. What was acknowledged before is kept.`,
      { cause: error },
    );
    this.osCode = osCode;
  }
}

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

/**
 * The store was written by a newer version of agent-tape (its schema version is above the ones this version
 * knows), so reading or writing it could misread or damage what the newer version keeps. Nothing was changed.
 */
export class StoreTooNewError extends AgentTapeError {
  readonly code = "STORE_TOO_NEW" as const;
  constructor(
    /** Where the store is, e.g. the PostgreSQL schema's name. */
    readonly where: string,
    readonly storeVersion: number,
    readonly knownVersion: number,
  ) {
    super(
      `The store ${where} was written by a newer agent-tape (its schema version is ${storeVersion}; this one ` +
        `knows up to ${knownVersion}). Nothing was changed. Upgrade agent-tape on this machine to use it.`,
    );
  }
}

/**
 * An optional package a feature needs is not installed (the `pg` driver, for a PostgreSQL store): install it
 * beside agent-tape. Nothing was read or written. `cause` is the module loader's error.
 */
export class MissingPackageError extends AgentTapeError {
  readonly code = "PACKAGE_MISSING" as const;
  constructor(
    /** The npm package to install, e.g. "pg". */
    readonly packageName: string,
    /** What needs it, in the user's words. */
    what: string,
    cause?: unknown,
  ) {
    super(
      `${what} needs the npm package "${packageName}", which is not installed where agent-tape is. ` +
        `Nothing was read or written. Install it (npm install ${packageName}) and run this again.`,
      { cause },
    );
  }
}
