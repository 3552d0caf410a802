import { AsyncLocalStorage } from "node:async_hooks";
import { InvalidArgumentError, isAgentTapeError } from "../core/errors.js";
import type { LockedSession, LockWait, StorageBackend } from "../backend/types.js";
import { sleep } from "../core/sleep.js";
import { definedFields } from "../core/defined-fields.js";

export interface LeaseOptions {
  /** Release the lock after this long with nothing to do. 0 = release after every operation. */
  idleMs: number;
  /** Hand the lock over (release, pause, re-take) after holding it this long, so other processes get a turn. */
  maxHoldMs: number;
  /** How long to wait for another holder before LOCKED. @default the backend's */
  waitMs?: number | undefined;
  onWait?: ((wait: LockWait) => void) | undefined;
  /** Runs once each time the lock is taken, before any operation: finishes interrupted work. */
  onAcquired: (locked: LockedSession) => Promise<void>;
  /** Runs just before the lock is given up, while still held (best-effort: its failure is ignored). */
  beforeRelease?: (locked: LockedSession) => Promise<void>;
  /** Runs before the lock is taken: where a store gives up other idle leases the backend has no room for. */
  beforeLock?: () => Promise<void>;
}

// Which sessions the current async call chain holds: the lock is not re-entrant, so a nested
// store call for the same session would wait for itself forever. Detect it and say so instead.
const heldHere = new AsyncLocalStorage<ReadonlySet<SessionLease>>();

/**
 * One session's lock as this process holds it: operations run one at a time, and the lock is
 * kept between them (a lease) instead of being taken per operation — a lock round trip costs
 * more than the fsynced append itself (docs/ARCHITECTURE.md, "Lock lease"; bench "lock per append vs lease").
 * The lease is given up after `idleMs` without work, and handed over after `maxHoldMs` even when
 * busy if someone is waiting, so another process is never locked out for long.
 */
export class SessionLease {
  private chain: Promise<unknown> = Promise.resolve();
  private queued = 0;
  private locked: LockedSession | undefined;
  private heldSince = 0;
  /** A question "does anyone wait?" in flight (askWhetherOthersWait), and the lock it was answered yes for. */
  private asking = false;
  private waiterSeen: LockedSession | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Operations ever run: an idle timer's release finds whether one ran since the timer went off. */
  private runs = 0;
  /** When the last operation ended (Date.now()): which idle lease is the oldest. */
  lastUsed = 0;

  constructor(
    private readonly backend: StorageBackend,
    readonly sessionId: string,
    private readonly options: LeaseOptions,
  ) {}

  /**
   * Runs `fn` with the session locked, after every operation queued before it. With `markHeld`,
   * calls made from inside `fn` are recognised as re-entrant and refused. Only user callbacks
   * need that: marking turns on Node 20's promise hooks for the whole process, which slows every
   * await after it, a replay's and an append's too.
   */
  run<T>(fn: (locked: LockedSession) => Promise<T>, signal?: AbortSignal, markHeld = false): Promise<T> {
    if (heldHere.getStore()?.has(this)) {
      return Promise.reject(
        new InvalidArgumentError(
          `Session "${this.sessionId}" is already locked by this call chain; ` +
            `use the LockedSession you were given instead of calling the store again.`,
        ),
      );
    }
    this.queued++;
    this.runs++;
    const result = this.chain.then(() => this.runLocked(fn, signal, markHeld));
    this.chain = result.then(ignore, ignore);
    return result;
  }

  private async runLocked<T>(
    fn: (locked: LockedSession) => Promise<T>,
    signal: AbortSignal | undefined,
    markHeld: boolean,
  ): Promise<T> {
    try {
      signal?.throwIfAborted();
      // The lock held and nobody seen waiting (the common case): no await, so no promise and tick per operation.
      const locked = this.heldForNext() ?? (await this.acquire(signal));
      if (!markHeld) return await fn(locked);
      const held = new Set(heldHere.getStore() ?? []).add(this);
      return await heldHere.run(held, () => fn(locked));
    } finally {
      this.lastUsed = Date.now();
      if (--this.queued === 0) {
        if (this.options.idleMs <= 0) {
          if (this.locked?.held !== false) await this.releaseNow(); // a lost lock waits to be reported, as below
        } else this.scheduleRelease();
      }
    }
  }

  /** The lock, when acquire would hand it out as it is (held, no hand-over due), else undefined. */
  private heldForNext(): LockedSession | undefined {
    const locked = this.locked;
    if (locked === undefined || this.waiterSeen === locked || !locked.held) return undefined;
    this.askWhetherOthersWait();
    return locked;
  }

  private async acquire(signal?: AbortSignal): Promise<LockedSession> {
    if (this.locked !== undefined && this.waiterSeen === this.locked && this.locked.held) {
      // A look past maxHoldMs found someone waiting: hand over, with a pause longer than a waiter's poll
      // interval, so a waiting process can take its turn.
      this.waiterSeen = undefined;
      await this.releaseNow();
      await sleep(25, signal);
    } else this.askWhetherOthersWait();
    if (this.locked && !this.locked.held) {
      // Lost while we held it (proper-lockfile noticed from its timer): another process may have
      // written meanwhile. This operation reports it as LOCK_COMPROMISED; the next takes the lock afresh.
      // Asked before releasing: a lease found lapsed is reported the same way as one found taken.
      const lost = compromisedError(this.locked);
      await this.releaseNow();
      if (lost) throw lost;
    }
    if (!this.locked) {
      await this.options.beforeLock?.();
      const locked = await this.backend.lock(
        this.sessionId,
        definedFields({ waitMs: this.options.waitMs, onWait: this.options.onWait, signal }),
      );
      try {
        await this.options.onAcquired(locked);
      } catch (error) {
        await locked.release();
        throw error;
      }
      this.locked = locked;
      this.heldSince = Date.now();
    }
    return this.locked;
  }

  /**
   * Past `maxHoldMs` of holding, asks the backend whether anyone waits for the lock, but no operation waits for the
   * answer: the question is a round trip of its own (on PostgreSQL a look at pg_locks on another connection), and
   * awaited it put 1-1.6 ms on one append a second, 0.15 ms on the PostgreSQL store's p99 (docs/ARCHITECTURE.md,
   * "Lock lease"; docs/postgres.md, "Benchmark"). A yes makes the next operation hand the lock over (acquire); a
   * no, a look again after another `maxHoldMs`: a lone writer never stalls, as releasing would cost it the pause and
   * a lock round trip for nobody.
   */
  private askWhetherOthersWait(): void {
    const locked = this.locked;
    if (!locked?.held || this.asking || Date.now() - this.heldSince <= this.options.maxHoldMs) return;
    this.asking = true;
    void someoneWaits(locked).then((waits) => {
      this.asking = false;
      if (this.locked !== locked) return; // released (or lost) meanwhile: nothing left to hand over
      if (waits) this.waiterSeen = locked;
      else this.heldSince = Date.now();
    });
  }

  /**
   * (Re)starts the idle timer. One timer per lease, restarted (refresh) at the end of each operation rather than
   * cleared at its start and made anew at its end: a timer object per operation, on the path of every append.
   */
  private scheduleRelease(): void {
    if (!this.locked) return;
    if (this.idleTimer !== undefined) this.idleTimer.refresh();
    else {
      this.idleTimer = setTimeout(this.onIdle, this.options.idleMs);
      this.idleTimer.unref(); // an idle lease must not keep the process alive
    }
  }

  /**
   * The idle timer's end. An operation queued or running, or one run between now and the release's turn in the
   * chain, keeps the lock: its own end restarts the timer.
   */
  private readonly onIdle = (): void => {
    if (this.queued > 0) return;
    const runs = this.runs;
    // Through the chain, so an operation that arrives meanwhile never races the release. A lock
    // found lost is kept (it holds nothing) so the next operation still reports LOCK_COMPROMISED.
    this.chain = this.chain
      .then(() =>
        this.queued === 0 && this.runs === runs && this.locked?.held !== false ? this.releaseNow() : undefined,
      )
      .catch(() => undefined);
  };

  private async releaseNow(): Promise<void> {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const locked = this.locked;
    this.locked = undefined;
    if (!locked) return;
    if (locked.held) await this.options.beforeRelease?.(locked).catch(() => undefined);
    await locked.release();
  }

  /** True while the lock is held with no operation running or queued: a lease that could be given up now. */
  get idle(): boolean {
    return this.queued === 0 && this.holding;
  }

  /**
   * Gives the lock up now if it is idle, as the idle timer would. Taken in the chain's turn (counted as queued),
   * so an operation arriving meanwhile runs after the release and takes the lock afresh.
   */
  async releaseIfIdle(): Promise<void> {
    if (!this.idle) return;
    this.queued++;
    const released = this.chain.then(() => this.releaseNow()).finally(() => this.queued--);
    this.chain = released.catch(() => undefined);
    await released.catch(() => undefined); // best-effort, as the idle timer's release
  }

  /** True while the lock is held (between operations, during the idle time). */
  get holding(): boolean {
    return this.locked?.held ?? false;
  }

  /** Waits for queued work, then releases the lock. */
  async close(): Promise<void> {
    await this.chain;
    await this.releaseNow();
  }
}

/** Made once: a chain's link per operation needs no closures of its own. */
const ignore = (): undefined => undefined;

/**
 * A backend that cannot tell is assumed to have a waiter: handing over is always safe, only slower. Never rejects
 * (nobody awaits it), nor does a backend's failure to answer: that too counts as a waiter.
 */
async function someoneWaits(locked: LockedSession): Promise<boolean> {
  if (!locked.othersWaiting) return true;
  try {
    return await locked.othersWaiting();
  } catch {
    return true;
  }
}

function compromisedError(lost: LockedSession): unknown {
  try {
    lost.assertHeld();
  } catch (error) {
    // A lock this store released itself (a delete) is simply taken again; only a lost one is reported.
    if (isAgentTapeError(error, "LOCK_COMPROMISED")) return error;
  }
  return undefined;
}
