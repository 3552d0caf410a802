// Errors about the workspace folder: locked by another rewind, not the one recorded, a path outside it,
// too large to scan, not empty for a fork.

import { AgentTapeError } from "./base.js";

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
