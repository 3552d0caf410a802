// Errors a rewind or an undo stops with: nothing to undo, a change it could not keep, a conflict, the
// retention horizon, a failure rolled back or left pending.

import type { FileState } from "../events.js";
import { AgentTapeError } from "./base.js";

export class NothingToUndoError extends AgentTapeError {
  readonly code = "NOTHING_TO_UNDO" as const;
  constructor(
    readonly sessionId: string,
    reason: string,
  ) {
    super(`Nothing to undo in session "${sessionId}": ${reason}.`);
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
