import type { IndexEntry } from "./index-entry.js";

/** Puts back what an in-place walk changed (`Walked.prior`), so the index is again the one it started from. */
export function revertWalk(entries: Map<string, IndexEntry>, prior: ReadonlyMap<string, IndexEntry | undefined>): void {
  for (const [path, entry] of prior) {
    if (entry === undefined) entries.delete(path);
    else entries.set(path, entry);
  }
}
