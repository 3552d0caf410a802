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
      const backoff = Math.min(20, 1 + attempt) * (0.5 + Math.random());
      await sleep(Math.min(backoff, options.waitMs - waited), options.signal);
    }
  }
}
