import { LockedError } from "../../core/errors.js";

interface Waiter {
  grant: () => void;
}

interface KeyState {
  waiters: Waiter[];
}

/**
 * Exclusive locks by key inside one process. Waiters are served first come, first served, and a
 * released lock passes straight to the next waiter, so nobody can barge in between.
 */
export class InProcessLocks {
  // A key is present exactly while its lock is held.
  private readonly lockedKeys = new Map<string, KeyState>();

  /**
   * Resolves with this holder's release function (idempotent). Rejects with LOCKED after
   * `waitMs`, or with `signal.reason` if the signal aborts first; a rejected waiter never holds
   * the lock.
   */
  acquire(key: string, options: { waitMs: number; signal?: AbortSignal | undefined }): Promise<() => void> {
    const { signal } = options;
    signal?.throwIfAborted();
    const state = this.lockedKeys.get(key);
    if (!state) {
      this.lockedKeys.set(key, { waiters: [] });
      return Promise.resolve(this.releaserFor(key));
    }
    if (options.waitMs <= 0) return Promise.reject(new LockedError(key, 0));
    const started = Date.now();
    return new Promise((resolve, reject) => {
      const leave = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        const at = state.waiters.indexOf(waiter);
        if (at !== -1) state.waiters.splice(at, 1);
      };
      const waiter: Waiter = {
        grant: () => {
          leave();
          resolve(this.releaserFor(key));
        },
      };
      const onAbort = () => {
        leave();
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        leave();
        reject(new LockedError(key, Date.now() - started));
      }, options.waitMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      state.waiters.push(waiter);
    });
  }

  /** Whether someone is queued for the lock on `key`. */
  hasWaiters(key: string): boolean {
    return (this.lockedKeys.get(key)?.waiters.length ?? 0) > 0;
  }

  private releaserFor(key: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const state = this.lockedKeys.get(key);
      const next = state?.waiters[0];
      if (next) next.grant();
      else this.lockedKeys.delete(key);
    };
  }
}
