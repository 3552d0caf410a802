import type { SnapshotLimits } from "../checkpoint/snapshot.js";

/** What a rewind's undo snapshot reads at most: a larger file is recorded `skipped: too_large`, kept no copy of. */
export const UNDO_LIMITS: SnapshotLimits = {
  maxFileBytes: 5 * 1024 * 1024,
  maxDirectoryEntries: 100_000,
  maxDirectoryBytes: 1024 * 1024 * 1024,
  concurrency: 8,
};
