import { randomBytes } from "node:crypto";
import { mkdir, readdir, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import lockfile from "proper-lockfile";
import { LockedError } from "../../core/errors.js";
import { sleep } from "../../core/sleep.js";

export interface FileLockOptions {
  /** A lock whose holder stopped refreshing it for this long is taken over. */
  staleMs: number;
  /** How long to wait for another holder before LOCKED. */
  waitMs: number;
  signal?: AbortSignal | undefined;
  /** Called (from a timer) if the lock is lost while held. Must not throw. */
  onCompromised: (error: Error) => void;
}

/**
 * Takes the cross-process lock on `file` (a `<file>.lock` folder, refreshed while held) and
 * returns its release function. Polls with a short jittered back-off rather than proper-lockfile's
 * exponential retries, so a waiter notices a released lock within a few milliseconds.
 */
export async function acquireFileLock(
  sessionId: string,
  file: string,
  options: FileLockOptions,
): Promise<() => Promise<void>> {
  const started = Date.now();
  let waiting: WaitingMarker | undefined;
  try {
    for (let attempt = 0; ; attempt++) {
      options.signal?.throwIfAborted();
      try {
        return await lockfile.lock(file, {
          stale: options.staleMs,
          update: Math.max(1000, Math.floor(options.staleMs / 4)),
          realpath: false,
          retries: 0,
          onCompromised: options.onCompromised,
        });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ELOCKED") throw error;
        const waited = Date.now() - started;
        if (waited >= options.waitMs) throw new LockedError(sessionId, waited, { cause: error });
        waiting ??= await WaitingMarker.place(file);
        await waiting?.refresh(options.staleMs);
        const backoff = Math.min(20, 1 + attempt) * (0.5 + Math.random());
        await sleep(Math.min(backoff, options.waitMs - waited), options.signal);
      }
    }
  } finally {
    await waiting?.remove();
  }
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
