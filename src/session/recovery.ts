import type { LockedSession, StorageBackend } from "../backend/types.js";
import { BLOBS_IN_FLIGHT_RECORD, recoverBlobsInFlight } from "../blobs/in-flight.js";

/**
 * Work that a lock holder can leave half done when it dies, named by the side record it writes
 * first. Layers above the session (the rewind) register theirs here, so the session layer can
 * finish their work without importing them (docs/ARCHITECTURE.md, "Recovery").
 */
export interface RecoveryStep {
  /** The side record whose presence means an operation was interrupted. */
  record: string;
  /**
   * True when a reader must not see the session until the step ran (a half-done rewind would show
   * a log that matches neither the state before nor the one after).
   */
  blocksReaders: boolean;
  /** Finishes or undoes the interrupted operation. Idempotent: a crash inside it is recovered again. */
  run(backend: StorageBackend, locked: LockedSession): Promise<void>;
}

const registered: RecoveryStep[] = [];

/** Adds a step run at every lock acquisition where its record is found. Registering twice is a no-op. */
export function registerRecoveryStep(step: RecoveryStep): void {
  if (!registered.some((s) => s.record === step.record)) registered.push(step);
}

/** Names of the records that make a reader wait for recovery. */
export function recordsThatBlockReaders(): string[] {
  return registered.filter((s) => s.blocksReaders).map((s) => s.record);
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
