// named-fs: a workspace name may hold bytes that are not UTF-8 (docs/ARCHITECTURE.md, "Names and depths").
import { lstatSync } from "../core/named-fs.js";
import { confine, type ParentLooks } from "../checkpoint/confine.js";
import type { FileChange } from "../core/events.js";
import { yieldIfLong } from "../core/time-slices.js";

/**
 * The files a rewind's restores take out of a hard-link group: a restore writes a new file and renames it over the
 * name, so a name that shares its inode with others (inside the workspace or out) comes back as a file of its own,
 * and the other names keep what they hold. Snapshots do not record link groups, so the rewind cannot make them
 * again; it says so instead (docs/ARCHITECTURE.md, "Workspace index"). Only looks (lstat), in path order: the
 * parents' checks shared (each folder looked at once), each lstat a synchronous call in time slices, where a
 * thread-pool round trip each cost more than the call (docs/ARCHITECTURE.md, "Batched file work").
 */
export async function hardLinksSplit(realWorkspace: string, changes: readonly FileChange[]): Promise<string[]> {
  const split: string[] = [];
  const looks: ParentLooks = new Map();
  for (const change of changes) {
    if (change.action !== "restore") continue;
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
