import type { LockedSession, SignalOption, StorageBackend } from "../backend/types.js";
import { BLOBS_IN_FLIGHT_RECORD, recoverBlobsInFlight } from "../blobs/in-flight.js";

/**
 * Work that a lock holder can leave half done when it dies, named by the side record it writes
 * first. Layers above the session (the rewind) register theirs here, so the session layer can
 * finish their work without importing them (docs/ARCHITECTURE.md, "Recovery").
 */
export interface RecoveryStep {
  /** The side record whose presence means an operation was interrupted. */
  record: string;
  /** Finishes or undoes the interrupted operation. Idempotent: a crash inside it is recovered again. */
  run(backend: StorageBackend, locked: LockedSession): Promise<void>;
  /**
   * What a reader reports while the record is there (a rewind: `SessionInfo.pendingRewind`), without taking
   * the lock or changing anything: readers never finish, undo or fail because of pending work. May throw
   * when the record cannot be acted on at all (STORE_TAMPERED).
   */
  pendingForReaders?(
    backend: StorageBackend,
    sessionId: string,
    options: SignalOption,
  ): Promise<PendingRewind | undefined>;
}

/** A rewind (or an undo) that is not finished, as a reader sees it (docs/ARCHITECTURE.md, "Recovery"). */
export interface PendingRewind {
  /**
   * `"interrupted"`: running in another process, or its process died; the next writer finishes it.
   * `"failed"`: its caller was told it failed and could not be rolled back (REWIND_FAILED, `rolledBack: false`);
   * the next writer rolls it back once the cause is fixed, and never finishes it.
   */
  state: "interrupted" | "failed";
  /** Why, in words: the failure's cause for a failed one. */
  reason: string;
}

const registered: RecoveryStep[] = [];

/** Adds a step run at every lock acquisition where its record is found. Registering twice is a no-op. */
export function registerRecoveryStep(step: RecoveryStep): void {
  if (!registered.some((s) => s.record === step.record)) registered.push(step);
}

/** What readers report about the work pending in a session whose side records are `records`; one listing read. */
export async function pendingForReaders(
  backend: StorageBackend,
  sessionId: string,
  records: readonly string[],
  options: SignalOption,
): Promise<PendingRewind | undefined> {
  for (const step of registered) {
    if (!step.pendingForReaders || !records.includes(step.record)) continue;
    const pending = await step.pendingForReaders(backend, sessionId, options);
    if (pending) return pending;
  }
  return undefined;
}

/**
 * Runs each time a session's lock is taken, before anything else: work that a crashed or
 * cancelled holder left half done is finished or undone here, so every operation starts from a
 * consistent session. Registered steps run first, the blobs-in-flight prune last: it must see
 * what they appended (a rewind marker references its undo blobs).
 */
export async function recoverInterruptedWork(backend: StorageBackend, locked: LockedSession): Promise<void> {
  const records = await backend.listRecords(locked.sessionId);
  if (records.length === 0) return;
  for (const step of registered) if (records.includes(step.record)) await step.run(backend, locked);
  if (records.includes(BLOBS_IN_FLIGHT_RECORD)) await recoverBlobsInFlight(backend, locked);
}
