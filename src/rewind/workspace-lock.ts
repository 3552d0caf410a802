import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, unlinkSync, writeFileSync } from "node:fs";
// The workspace's path may hold bytes that are not UTF-8 (docs/ARCHITECTURE.md, "Names and depths").
import { statSync } from "../core/named-fs.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { acquireFileLock, type FileLock } from "../backend/fs/lock.js";
import { LockCompromisedError, StorageFailedError, WorkspaceLockedError, isAgentTapeError } from "../core/errors.js";

/**
 * The cross-process lock on one workspace folder (docs/ARCHITECTURE.md, "Workspace lock"): every rewind and
 * undo that changes files holds it from its conflict check to its last write, whatever session or store it
 * belongs to, so two of them never interleave their looks and writes on one folder: the second one's conflict
 * check sees what the first one wrote. It is keyed by the folder itself (its device and inode), so every path
 * that leads to it (a symlink, a bind mount, a rename while held) shares the one lock. It lives outside the
 * workspace, in a per-user lock folder (see {@link workspaceLockFolder}): nothing is written in the workspace.
 */
export interface WorkspaceLock {
  /** Throws LOCK_COMPROMISED when the lease lapsed (another process may have taken it over as stale). */
  assertHeld(): void;
  release(): Promise<void>;
}

// As the session lock's default (lockStaleMs): the same lease code, refreshed from a timer; a holder that died
// (kill -9 mid-rewind) is taken over after it, so recovery waits no longer than for the session lock. A waiter
// gives up only after a long wait: a rewind of many files takes a while.
const STALE_MS = 5_000;
const WAIT_MS = 120_000;

/**
 * Where the workspace locks live: AGENT_TAPE_LOCK_DIR when set (a folder shared by every user who may rewind the
 * same workspaces), else a per-user folder made private (mode 0700) under XDG_RUNTIME_DIR or the temp folder.
 * Per user: a folder others could write would let them remove or plant a lock.
 */
export function workspaceLockFolder(): string {
  const given = process.env.AGENT_TAPE_LOCK_DIR;
  if (given !== undefined && given !== "") return given;
  const user = process.getuid?.() ?? (process.env.USERNAME || "user");
  return join(process.env.XDG_RUNTIME_DIR || tmpdir(), `agent-tape-${user}`, "workspace-locks");
}

export async function lockWorkspace(
  realWorkspace: string,
  options: { signal?: AbortSignal | undefined; waitMs?: number } = {},
): Promise<WorkspaceLock> {
  // The lock folder's checks, the workspace's stat and the note are synchronous calls of microseconds: through the
  // thread pool they were a round trip each (docs/ARCHITECTURE.md, "Batched file work").
  const folder = privateLockFolder();
  // A folder gone since (a pending rewind's) is keyed by its path: nothing else can be writing it.
  const info = statOrUndefined(realWorkspace);
  // With its birth time: a folder made where a removed one was may get its inode number back, and would then meet
  // a lock a killed process left on the old one (and wait for it to go stale). Where the filesystem keeps no
  // birth time it is 0: device and inode alone.
  const folderItself = info ? `${info.dev}:${info.ino}:${info.birthtimeMs}` : `path:${realWorkspace}`;
  const key = createHash("sha256").update(folderItself).digest("hex").slice(0, 40);
  const file = join(folder, key);
  let lost: Error | undefined;
  let lock: FileLock;
  try {
    lock = await acquireFileLock(realWorkspace, file, {
      staleMs: STALE_MS,
      waitMs: options.waitMs ?? WAIT_MS,
      signal: options.signal,
      onCompromised: (error) => {
        lost = error;
      },
    });
  } catch (error) {
    if (isAgentTapeError(error, "LOCKED"))
      throw new WorkspaceLockedError(realWorkspace, error.waitedMs, { cause: error.cause });
    if (isAgentTapeError(error)) throw error;
    throw new StorageFailedError(error as NodeJS.ErrnoException);
  }
  // Which folder a held lock is for, for a person looking at the lock folder; never read by the lock itself.
  // Written by the holder and removed before it lets go, so the folder is empty when no rewind runs.
  const note = `${file}.workspace`;
  try {
    writeFileSync(note, `${realWorkspace}\n`, { flag: "w" });
  } catch {
    // only a note for a person: the lock holds without it
  }
  return {
    assertHeld: () => {
      if (lost !== undefined || lock.lapsed())
        throw new LockCompromisedError(`workspace ${realWorkspace}`, { cause: lost });
    },
    release: async () => {
      try {
        unlinkSync(note);
      } catch {
        // already gone
      }
      await lock.release();
    },
  };
}

function statOrUndefined(path: string) {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** Runs `fn` holding the workspace's lock. */
export async function withWorkspaceLock<T>(
  realWorkspace: string,
  fn: (lock: WorkspaceLock) => Promise<T>,
  options: { signal?: AbortSignal | undefined } = {},
): Promise<T> {
  const lock = await lockWorkspace(realWorkspace, options);
  try {
    return await fn(lock);
  } finally {
    await lock.release();
  }
}

/** The lock folder, made if missing; the default per-user one must be this user's, and no one else may write it. */
function privateLockFolder(): string {
  const folder = workspaceLockFolder();
  const shared = process.env.AGENT_TAPE_LOCK_DIR !== undefined && process.env.AGENT_TAPE_LOCK_DIR !== "";
  try {
    mkdirSync(folder, { recursive: true, mode: shared ? 0o777 : 0o700 });
    if (shared) return folder;
    const mine = join(folder, "..");
    const info = lstatSync(mine);
    const uid = process.getuid?.();
    if (!info.isDirectory() || (uid !== undefined && info.uid !== uid) || (info.mode & 0o022) !== 0)
      throw Object.assign(new Error(`${mine} is not a private folder of this user's`), {
        code: "EACCES",
        syscall: "use the workspace lock folder",
        path: mine,
      });
  } catch (error) {
    if (isAgentTapeError(error)) throw error;
    throw new StorageFailedError(error as NodeJS.ErrnoException);
  }
  return folder;
}
