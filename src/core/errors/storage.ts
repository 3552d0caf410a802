// Errors about what the store keeps and where: blobs, files changed behind its back, the OS refusing,
// a store from a newer version, a package not installed.

import { AgentTapeError } from "./base.js";

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
