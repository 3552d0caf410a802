import type { IgnoredChanges } from "../../core/events.js";
import type { IndexEntry } from "./index-entry.js";

/** How many ignored paths a checkpoint or a report names; the count covers them all. */
export const MAX_NAMED_IGNORED = 20;

// git rewrites files in `.git` on most commands (the index, refs, its lock files), so a `.git` whose stat moved
// is no news; one removed or replaced is.
const GIT_DIR = ".git";

/**
 * What a command did to the ignored entries the scan before it met (`before`), judged by the scan after it:
 * removed (gone, or another file or folder under the name), or changed (its stat moved: for a file its bytes
 * or mode, for a folder a name added or removed right inside it). Undefined when nothing. A change deeper
 * inside an ignored folder is not seen: the scans do not enter it (docs/ARCHITECTURE.md, "Workspace index").
 */
export function ignoredChangesBetween(
  before: ReadonlyMap<string, IndexEntry>,
  after: ReadonlyMap<string, IndexEntry>,
): IgnoredChanges | undefined {
  const found: IgnoredChanges["paths"] = [];
  for (const [path, was] of before) {
    const now = after.get(path);
    if (now === undefined || now.kind !== was.kind || now.ino !== was.ino) found.push({ path, change: "removed" });
    else if (isGitDir(path)) continue;
    else if (now.mtimeNs !== was.mtimeNs || now.ctimeNs !== was.ctimeNs || now.size !== was.size)
      found.push({ path, change: "changed" });
  }
  return bounded(found);
}

/**
 * The ignored changes of the commands among `checkpoints` (a rewind's cut: what it cannot put back), one per
 * path (a removal wins over a change), bounded as in a checkpoint. Undefined when none.
 */
export function ignoredChangesIn(
  checkpoints: Iterable<{ ignoredChanges?: IgnoredChanges | undefined }>,
): IgnoredChanges | undefined {
  const byPath = new Map<string, "removed" | "changed">();
  let unnamed = 0;
  for (const { ignoredChanges } of checkpoints) {
    if (ignoredChanges === undefined) continue;
    for (const { path, change } of ignoredChanges.paths) if (byPath.get(path) !== "removed") byPath.set(path, change);
    unnamed += ignoredChanges.count - ignoredChanges.paths.length;
  }
  const found = [...byPath].map(([path, change]) => ({ path, change }));
  const changes = bounded(found);
  if (changes !== undefined) changes.count += unnamed;
  return changes;
}

function bounded(found: IgnoredChanges["paths"]): IgnoredChanges | undefined {
  if (found.length === 0) return undefined;
  found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { count: found.length, paths: found.slice(0, MAX_NAMED_IGNORED) };
}

function isGitDir(path: string): boolean {
  return path === GIT_DIR || path.endsWith(`/${GIT_DIR}`);
}
