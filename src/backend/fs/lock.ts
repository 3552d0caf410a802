import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import { mkdir, readdir, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import lockfile from "proper-lockfile";
import { LockedError } from "../../core/errors.js";
import type { LockWait } from "../types.js";
import { sleep } from "../../core/sleep.js";
import {
  folderKey,
  holderIsGone,
  readHolderNote,
  removeHolderNote,
  signalable,
  writeHolderNote,
} from "./holder-note.js";

export interface FileLockOptions {
  /** A lock whose holder stopped refreshing it for this long is taken over. */
  staleMs: number;
  /** How long to wait for another holder before LOCKED. */
  waitMs: number;
  signal?: AbortSignal | undefined;
  /** Called (from a timer) if the lock is lost while held. Must not throw. */
  onCompromised: (error: Error) => void;
  /** Called when the lock is found held, then about once a second while waiting. */
  onWait?: ((wait: LockWait) => void) | undefined;
}

/** A held lock folder and what its holder knows about its lease (docs/ARCHITECTURE.md, "Lock lease"). */
export interface FileLock {
  /** True when this acquisition removed a stale lock: its old holder may still be alive and hold the log open. */
  readonly tookOver: boolean;
  /**
   * True once the lease went unrefreshed for (nearly) the stale threshold: another process may
   * already have taken the lock over, so it counts as lost even if nobody has yet.
   */
  lapsed(): boolean;
  /** Milliseconds since the lease was last refreshed. */
  sinceRefresh(): number;
  /** Gives the lock up, removing the lock folder only if it is still this holder's. */
  release(): Promise<void>;
  /** Stops refreshing and forgets the lock without touching the folder (it may be someone else's now). */
  abandon(): Promise<void>;
}

// A lease counts as lapsed this long before another process could call it stale: the folder's
// mtime can trail our clock reading by a coarse kernel tick.
const CLOCK_MARGIN_MS = 100;

type Phase = "acquiring" | "held" | "releasing" | "abandoning";
type Callback = (error: NodeJS.ErrnoException | null, ...rest: unknown[]) => void;

/** The lock folder this holder created, held open so its inode number cannot be reused while we hold it. */
interface OwnFolder {
  readonly dev: number;
  readonly ino: number;
  /** Undefined where a folder cannot be opened (Windows): identity then rests on the inode number alone. */
  readonly fd: number | undefined;
}

/**
 * The file operations proper-lockfile makes on the lock folder, watched and fenced (docs/ARCHITECTURE.md,
 * "Lock lease"). Whether the folder at the lock's path is still ours is decided by its inode, never by its
 * mtime: proper-lockfile stamps every new lock with the next whole second + 5 ms, so two processes that take
 * the lock within one second leave equal mtimes. Refreshes go through the descriptor of the folder we
 * created, so a late refresh can never touch a folder another process made. A lapsed lease is not revived
 * unless the folder is still ours, and release removes only our folder.
 */
class LeaseWatch {
  phase: Phase = "acquiring";
  tookOver = false;
  refreshedAt = 0;
  private own: OwnFolder | undefined;
  /** The mtime proper-lockfile believes the folder has (it compares it on every refresh). */
  private expectedMtimeMs = Number.NaN;
  /** Another holder's folder, as found while acquiring: the one proper-lockfile may judge stale and remove. */
  private found: { key: string; mtimeNs: bigint } | undefined;
  private readonly lockDir: string;

  constructor(
    private readonly staleMs: number,
    private readonly file: string,
  ) {
    this.lockDir = `${file}.lock`;
  }

  /** The {@link folderKey} of the lock folder this holder created, once it has (and the system tells). */
  folderKey(): string | undefined {
    if (!this.own) return undefined;
    try {
      const info =
        this.own.fd === undefined
          ? fs.statSync(this.lockDir, { bigint: true })
          : fs.fstatSync(this.own.fd, { bigint: true });
      return folderKey(info);
    } catch {
      return undefined;
    }
  }

  lapsed(): boolean {
    return Date.now() - this.refreshedAt > this.staleMs - CLOCK_MARGIN_MS;
  }

  /**
   * A lapsed lease that nobody took (the folder is still ours: a slow, loaded process, not a stolen lock)
   * is refreshed on the spot. Synchronous, so nothing of ours runs between the check and the refresh; rare
   * (only once lapsed). If a taker slips in regardless, the log fence still holds.
   */
  revive(): boolean {
    if (!this.own || !this.stillOurs()) return false;
    try {
      const now = new Date();
      if (this.own.fd === undefined) fs.utimesSync(this.lockDir, now, now);
      else fs.futimesSync(this.own.fd, now, now);
      this.refreshedAt = now.getTime();
      return true;
    } catch {
      return false;
    }
  }

  /** Whether the folder now at the lock's path is the one this holder created. */
  private stillOurs(): boolean {
    try {
      const info = fs.statSync(this.lockDir);
      return this.own !== undefined && info.ino === this.own.ino && info.dev === this.own.dev;
    } catch {
      return false;
    }
  }

  /**
   * Whether the lock's path holds the folder found, unchanged since, or nothing: false when another folder is
   * there now (its birth time, or its mtime where there is none, tells it from one with a reused inode), or the
   * found one was refreshed meanwhile (its holder is alive).
   */
  private stillAt(found: { key: string; mtimeNs: bigint }): boolean {
    try {
      const info = fs.statSync(this.lockDir, { bigint: true });
      return (folderKey(info) ?? `${info.dev}:${info.ino}`) === found.key && info.mtimeNs === found.mtimeNs;
    } catch {
      return true;
    }
  }

  private adopt(): void {
    let fd: number | undefined;
    try {
      fd = fs.openSync(this.lockDir, fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0));
    } catch {
      fd = undefined;
    }
    try {
      const info = fd === undefined ? fs.statSync(this.lockDir) : fs.fstatSync(fd);
      this.own = { dev: info.dev, ino: info.ino, fd };
    } catch {
      if (fd !== undefined) fs.closeSync(fd);
    }
  }

  /** Closes the folder's descriptor; the folder itself is left as it is. */
  forget(): void {
    const fd = this.own?.fd;
    this.own = undefined;
    if (fd !== undefined) fs.close(fd, () => undefined);
  }

  private lost(reason: string): NodeJS.ErrnoException {
    // proper-lockfile treats ENOENT as "lock lost" and reports it through onCompromised.
    return Object.assign(new Error(reason), { code: "ENOENT" });
  }

  // The calls proper-lockfile makes while nobody else holds the lock (make the folder, read its mtime, stamp it,
  // remove it) are synchronous, their answers given on the next tick as from the thread pool: each was a round
  // trip of its own for a call of microseconds (docs/ARCHITECTURE.md, "Batched file work").
  // Every other call proper-lockfile makes goes to node:fs itself, through the prototype: spreading node:fs's
  // hundred members into a new object for each lock taken cost 0.1 ms of a 1-file rewind's 7.
  readonly fs = Object.assign(Object.create(fs) as typeof fs, {
    mkdir: (path: string, cb: Callback) => {
      const at = Date.now();
      const error = failureOf(() => fs.mkdirSync(path));
      if (!error) {
        this.refreshedAt = at;
        this.adopt();
      }
      process.nextTick(cb, error);
    },
    stat: (path: string, cb: Callback) => {
      if (path === this.lockDir && this.phase === "acquiring" && !this.own) {
        // Another holder's folder, which proper-lockfile judges stale by its mtime (all it reads of it). A holder
        // of this machine that is gone (holder-note.ts) will never refresh it: shown stale now, not lockStaleMs
        // later. Read with its birth time, so the folder removed is the one judged (see rmdir).
        fs.stat(path, { bigint: true }, (error, info) => {
          if (error) return cb(error);
          const key = folderKey(info) ?? `${info.dev}:${info.ino}`;
          this.found = { key, mtimeNs: info.mtimeNs };
          readHolderNote(this.file).then(
            (note) => cb(null, note && holderIsGone(note, folderKey(info)) ? { ...info, mtime: new Date(0) } : info),
            () => cb(null, info),
          );
        });
        return;
      }
      answerOf(
        () => fs.statSync(path),
        (error, info) => {
          if (error || info === undefined || path !== this.lockDir) return cb(error, info);
          if (this.phase === "acquiring") {
            this.expectedMtimeMs = info.mtime.getTime(); // the mtime probe: proper-lockfile keeps what it reads
            return cb(null, info);
          }
          if (!this.stillOurs()) return cb(this.lost("the lock folder was replaced by another holder's"));
          // Ours (by inode): show proper-lockfile the mtime it expects, since a revival may have moved it.
          cb(null, { ...info, mtime: new Date(this.expectedMtimeMs) });
        },
      );
    },
    utimes: (path: string, atime: Date, mtime: Date, cb: Callback) => {
      if (this.phase === "held" && this.lapsed() && !this.revive())
        return cb(this.lost(`lease not refreshed for ${Date.now() - this.refreshedAt} ms`));
      if (path !== this.lockDir || !this.own || !this.stillOurs())
        return cb(this.lost("the lock folder was replaced by another holder's"));
      const at = Date.now();
      const done = (error: NodeJS.ErrnoException | null) => {
        if (!error) {
          this.refreshedAt = at;
          this.expectedMtimeMs = mtime.getTime();
        }
        cb(error);
      };
      const fd = this.own.fd;
      const error = failureOf(() =>
        fd === undefined ? fs.utimesSync(path, atime, mtime) : fs.futimesSync(fd, atime, mtime),
      );
      process.nextTick(done, error);
    },
    rmdir: (path: string, cb: Callback) => {
      if (this.phase === "acquiring" && !this.own) {
        // Only a stale lock is removed while acquiring: its holder crashed, or is stalled and alive. Only the
        // folder judged stale: one another waiter made since (it removed the stale one first) is a live lock.
        // A stale folder already gone was removed by such a waiter: the log is fenced all the same.
        if (this.found && !this.stillAt(this.found)) return cb(null);
        this.tookOver = true;
        fs.rmdir(path, cb);
        return;
      }
      const ours = this.phase !== "abandoning" && !(this.lapsed() && !this.revive()) && this.stillOurs();
      this.forget();
      if (!ours) return cb(null);
      const error = failureOf(() => fs.rmdirSync(path));
      process.nextTick(cb, error?.code === "ENOENT" ? null : error);
    },
    rmdirSync: (path: string) => {
      // proper-lockfile's exit hook removes every lock it thinks it holds: only ours, only if fresh.
      if (this.phase !== "held" || (this.lapsed() && !this.revive()) || !this.stillOurs()) return;
      try {
        fs.rmdirSync(path);
      } catch {
        // gone already, or unreadable: nothing of ours to remove
      }
    },
  });
}

/** Runs a synchronous call: the error it threw, or null. */
function failureOf(call: () => unknown): NodeJS.ErrnoException | null {
  try {
    call();
    return null;
  } catch (error) {
    return error as NodeJS.ErrnoException;
  }
}

/** Runs a synchronous call and hands its outcome to `cb` on the next tick, as an asynchronous call would. */
function answerOf<T>(call: () => T, cb: (error: NodeJS.ErrnoException | null, value?: T) => void): void {
  let value: T;
  try {
    value = call();
  } catch (error) {
    process.nextTick(cb, error as NodeJS.ErrnoException);
    return;
  }
  process.nextTick(cb, null, value);
}

/**
 * Takes the cross-process lock on `file` (a `<file>.lock` folder, refreshed while held). Polls
 * with a short jittered back-off rather than proper-lockfile's exponential retries, so a waiter
 * notices a released lock within a few milliseconds.
 */
export async function acquireFileLock(sessionId: string, file: string, options: FileLockOptions): Promise<FileLock> {
  const started = Date.now();
  let toldAt = 0;
  let waiting: WaitingMarker | undefined;
  try {
    for (let attempt = 0; ; attempt++) {
      options.signal?.throwIfAborted();
      const watch = new LeaseWatch(options.staleMs, file);
      try {
        const release = await lockfile.lock(file, {
          stale: options.staleMs,
          update: Math.max(1000, Math.floor(options.staleMs / 4)),
          realpath: false,
          retries: 0,
          fs: watch.fs,
          onCompromised: options.onCompromised,
        });
        watch.phase = "held";
        // Who holds it: for a waiter's onWait, and so a waiter can tell when this process is gone (holder-note.ts).
        // Never trusted for ownership: that is the lock folder's.
        await writeHolderNote(file, watch.folderKey()).catch(() => undefined);
        const letGo = async (phase: Phase) => {
          if (watch.phase !== "held") return;
          // Still ours while releasing (not when abandoning a lost lock: the note may be the taker's by now).
          if (phase === "releasing") removeHolderNote(file);
          watch.phase = phase;
          // ERELEASED: proper-lockfile already dropped it (found compromised); nothing left to remove.
          await release().catch(() => undefined);
          watch.forget();
        };
        return {
          tookOver: watch.tookOver,
          lapsed: () => watch.phase !== "held" || (watch.lapsed() && !watch.revive()),
          sinceRefresh: () => Date.now() - watch.refreshedAt,
          release: () => letGo("releasing"),
          abandon: () => letGo("abandoning"),
        };
      } catch (error) {
        watch.forget();
        if ((error as NodeJS.ErrnoException).code !== "ELOCKED") throw error;
        const waited = Date.now() - started;
        if (waited >= options.waitMs) throw new LockedError(sessionId, waited, { cause: error });
        if (options.onWait && Date.now() - toldAt >= 1000) {
          toldAt = Date.now();
          options.onWait(await describeWait(sessionId, file, options.staleMs, waited));
        }
        waiting ??= await WaitingMarker.place(file);
        await waiting?.refresh(options.staleMs);
        // Shorter than the pause of a holder that hands over (lease.ts), so a waiter polls at least once in that
        // window: a longer one could miss it, and a holder taking its lock again won most hand-overs of a busy
        // session (docs/ARCHITECTURE.md, "Lock lease").
        const backoff = Math.min(15, 1 + attempt) * (0.5 + Math.random());
        await sleep(Math.min(backoff, options.waitMs - waited), options.signal);
      }
    }
  } finally {
    await waiting?.remove();
  }
}

/** What a waiter can tell about the lock on `file`: its holder's pid (if it wrote one) and its staleness. */
async function describeWait(sessionId: string, file: string, staleMs: number, waitedMs: number): Promise<LockWait> {
  const folder = await stat(`${file}.lock`, { bigint: true }).catch(() => undefined);
  const refreshed = folder ? Number(folder.mtimeMs) : Date.now();
  const wait: LockWait = {
    sessionId,
    staleInMs: Math.max(0, Math.round(staleMs - (Date.now() - refreshed))),
    waitedMs,
  };
  const note = await readHolderNote(file);
  if (note) {
    wait.holderPid = note.pid;
    wait.holderAlive = signalable(note.pid) && !(folder && holderIsGone(note, folderKey(folder)));
  }
  return wait;
}

/**
 * Whether another process is waiting for the lock on `file`: a holder hands the lock over only
 * then (docs/ARCHITECTURE.md, "Lock lease"). A marker its waiter stopped refreshing (the waiter
 * died) does not count, and is removed.
 */
export async function othersWaiting(file: string, staleMs: number): Promise<boolean> {
  const dir = waitingDir(file);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return false; // nobody ever waited (no folder), or the session is gone
  }
  let someone = false;
  for (const name of names) {
    const marker = join(dir, name);
    const info = await stat(marker).catch(() => undefined);
    if (!info) continue;
    if (Date.now() - info.mtimeMs <= staleMs) someone = true;
    else await rm(marker, { force: true }).catch(() => undefined);
  }
  return someone;
}

const waitingDir = (file: string) => `${file}.waiting`;

/** A waiter's presence, as an empty file beside the lock, touched while it waits. */
class WaitingMarker {
  private touched = Date.now();

  private constructor(private readonly path: string) {}

  /** Undefined when it cannot be placed (the session's folder is gone): the waiter then waits unannounced. */
  static async place(file: string): Promise<WaitingMarker | undefined> {
    const dir = waitingDir(file);
    const path = join(dir, `${process.pid}-${randomBytes(6).toString("hex")}`);
    try {
      await mkdir(dir, { recursive: true });
      await writeFile(path, "");
      return new WaitingMarker(path);
    } catch {
      return undefined;
    }
  }

  async refresh(staleMs: number): Promise<void> {
    if (Date.now() - this.touched < staleMs / 4) return;
    this.touched = Date.now();
    const now = new Date();
    await utimes(this.path, now, now).catch(() => undefined);
  }

  async remove(): Promise<void> {
    await rm(this.path, { force: true }).catch(() => undefined);
  }
}
