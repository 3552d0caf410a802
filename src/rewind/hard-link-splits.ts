// named-fs: a workspace name may hold bytes that are not UTF-8 (docs/ARCHITECTURE.md, "Names and depths").
import { lstat } from "../core/named-fs.js";
import { confine } from "../checkpoint/confine.js";
import type { FileChange } from "../core/events.js";

/**
 * The files a rewind's restores take out of a hard-link group: a restore writes a new file and renames it over the
 * name, so a name that shares its inode with others (inside the workspace or out) comes back as a file of its own,
 * and the other names keep what they hold. Snapshots do not record link groups, so the rewind cannot make them
 * again; it says so instead (docs/ARCHITECTURE.md, "Workspace index"). Only looks (lstat), in path order.
 */
export async function hardLinksSplit(realWorkspace: string, changes: readonly FileChange[]): Promise<string[]> {
  const split: string[] = [];
  for (const change of changes) {
    if (change.action !== "restore") continue;
    const place = await confine(realWorkspace, change.path);
    if (!place.inside) continue;
    const info = await lstat(place.absolute).catch(() => undefined);
    if (info?.isFile() && info.nlink > 1) split.push(change.path);
  }
  return split.sort();
}
