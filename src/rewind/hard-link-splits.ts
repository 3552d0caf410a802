// named-fs: a workspace name may hold bytes that are not UTF-8 (docs/ARCHITECTURE.md, "Names and depths").
import { lstatSync } from "../core/named-fs.js";
import { confine, type ParentLooks } from "../checkpoint/confine.js";
import type { FileChange } from "../core/events.js";
import type { Snapshot } from "../checkpoint/snapshot.js";
import { yieldIfLong } from "../core/time-slices.js";

/**
 * The files a rewind's restores take out of a hard-link group: a restore writes a new file and renames it over the
 * name, so a name that shares its inode with others (inside the workspace or out) comes back as a file of its own,
 * and the other names keep what they hold. Snapshots do not record link groups, so the rewind cannot make them
 * again; it says so instead. The plan's read of the current files (`current`, the undo snapshot) already gives each
 * one's link count, from the fstat of that read; only a file it did not read (too large to keep, unreadable) is
 * looked at here (lstat), the parents' checks shared, in time slices (docs/ARCHITECTURE.md, "Workspace index").
 */
export async function hardLinksSplit(
  realWorkspace: string,
  changes: readonly FileChange[],
  current: Pick<Snapshot, "files" | "linked">,
): Promise<string[]> {
  const split: string[] = [];
  const read = new Set(current.files.flatMap((record) => (record.kind === "blob" ? [record.path] : [])));
  const looks: ParentLooks = new Map();
  for (const change of changes) {
    if (change.action !== "restore") continue;
    if (read.has(change.path)) {
      if (current.linked?.has(change.path)) split.push(change.path);
      continue;
    }
    await yieldIfLong();
    const place = await confine(realWorkspace, change.path, realWorkspace, looks);
    if (!place.inside) continue;
    const info = lstatOrUndefined(place.absolute);
    if (info?.isFile() && info.nlink > 1) split.push(change.path);
  }
  return split.sort();
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
