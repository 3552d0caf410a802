// The shape of a retention policy (docs/ARCHITECTURE.md, "Retention"): here, below the session layer, so a
// SessionStore can take one as an option; src/maintenance/retention.ts applies it.

export interface RetentionPolicy {
  /** Delete sessions with no event for more than this many days. */
  maxAgeDays?: number;
  /** Keep only this many sessions, the most recently active; delete the rest. */
  keepNewest?: number;
  /**
   * Delete sessions, least recently active first, until the sessions considered take at most this
   * many bytes on disk (the backend's `sizeOf`; a backend without it ignores this limit).
   */
  maxTotalBytes?: number;
  /**
   * Drop the checkpoints older than this many days from the sessions kept: their blobs are freed,
   * the conversation stays. A later rewind of files to before them is refused
   * (BEYOND_RETENTION_HORIZON); a rewind of the conversation still works.
   */
  checkpointMaxAgeDays?: number;
}

/** What a store opened with `retention` did (the first fields of maintenance's RetentionReport). */
export interface RetentionOutcome {
  dryRun: boolean;
  /** Sessions deleted, with why. */
  deleted: { sessionId: string; reason: string; bytes: number | undefined }[];
  /** Sessions the policy would delete whose lock a live process holds: kept. */
  held: { sessionId: string; reason: string }[];
  /** Sessions whose old checkpoints were dropped. */
  trimmed: { sessionId: string; horizon: number }[];
  /** Bytes freed in all; undefined when the backend cannot tell. */
  bytesFreed: number | undefined;
}
