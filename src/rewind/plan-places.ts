// Where a recorded path is now, for a rewind's plan (plan.ts): inside the workspace, leading outside, or below a
// link, where a name may be a second name of another place (docs/ARCHITECTURE.md, "Rewind intent").
import { basename, dirname, isAbsolute, join, relative } from "node:path";
import { lstat, realpath } from "../core/named-fs.js";
import type { FileChange } from "../core/events.js";
import { confine, inWorkspace, lookOnce, placeLexically, type ParentLooks } from "../checkpoint/confine.js";
import type { WantedState } from "./wanted-state.js";

/** What every question of this file is asked against: the workspace, the states the rewind wants, the looks so far. */
export interface Places {
  realWorkspace: string;
  /** The spelling the caller used, so absolute recorded paths through it are placed too. */
  givenWorkspace: string;
  wanted: ReadonlyMap<string, WantedState>;
  /** The parent folders this plan has looked at (`confine`). */
  looks: ParentLooks;
}

/**
 * True when a folder above `path` that the rewind makes a folder is a symlink now (the folder itself placed
 * inside). The rewind replaces that link with a real folder before it writes anything below it (parents first),
 * so where the link leads (outside, or nowhere: a dangling link is outside for `confine`) says nothing of where
 * `path` will be: it is inside, in the new folder. Apply still checks each folder it writes in when it uses it,
 * so if the link is still there then, the write is refused (docs/ARCHITECTURE.md, "Confinement"). What is read
 * below the link now is not this plan's to keep (see `replacedLinks`). Asked only of paths `confine` put outside.
 */
async function belowLinkMadeFolder(places: Places, path: string): Promise<boolean> {
  const { realWorkspace, givenWorkspace, wanted, looks } = places;
  for (const folder of foldersAbove(path)) {
    if (wanted.get(folder)?.kind !== "directory") continue;
    const place = await confine(realWorkspace, folder, givenWorkspace, looks);
    if (!place.inside) return false; // a link above the folder leads out: so does everything below it
    const info = await lstat(place.absolute).catch(() => undefined);
    if (info?.isSymbolicLink()) return true;
  }
  return false;
}

/**
 * True when a folder above `path` is a link now that the rewind leaves a link (it wants it unchanged, a link, or
 * absent): below that link `path` is a second name of the place the link leads to, recorded when a tool was handed
 * it (`l/f.txt`), whose landing place the capture recorded by its own name (`a/f.txt`). The plan restores that
 * one; restoring the second name too would write through the link a state that may be stale (a change made since
 * by the place's own name: a listing of `a` taken later that leaves `f.txt` out), and deleting it would delete
 * through the link (docs/ARCHITECTURE.md, "Rewind intent"). A link the rewind replaces by a folder is not such a
 * folder: below it the paths are the new folder's own (`belowLinkMadeFolder`).
 */
async function isSecondName({ realWorkspace, wanted, looks }: Places, path: string): Promise<boolean> {
  for (const folder of foldersAbove(path)) {
    const found = await lookOnce(looks, inWorkspace(realWorkspace, folder));
    if ("info" in found && found.info.isSymbolicLink()) return wanted.get(folder)?.kind !== "directory";
  }
  return false;
}

/**
 * Where a recorded path is now, inside the workspace; or the skip to report for it (it leads outside now, or lies
 * below a link put there by someone else); or undefined when the plan has nothing to do there (a second name below
 * a link, acted on by its own name; absent below a dangling link the rewind deletes).
 */
export async function placeRecord(
  places: Places,
  recordedPath: string,
  becomes: WantedState,
): Promise<{ path: string } | FileChange | undefined> {
  const { realWorkspace, givenWorkspace, wanted, looks } = places;
  const place = await confine(realWorkspace, recordedPath, givenWorkspace, looks);
  if (place.inside) {
    if (!(await isSecondName(places, place.path))) return place;
    return (await landsOnRecord(places, place.path))
      ? undefined
      : { path: place.path, action: "skip", reason: "below_link" };
  }
  const lexical = placeLexically(realWorkspace, recordedPath, givenWorkspace);
  // Wanted absent below a path wanted absent, a link now that leads nowhere inside: deleting the link deletes
  // the name; reporting it skipped, "outside_workspace", would be for nothing.
  if (lexical.inside && becomes.kind === "absent" && belowWantedAbsent(lexical.path, wanted)) return undefined;
  if (lexical.inside && (await belowLinkMadeFolder(places, lexical.path))) return lexical;
  return { path: recordedPath, action: "skip", reason: "outside_workspace" };
}

/** True when a folder above `path` is wanted absent. */
function belowWantedAbsent(path: string, wanted: ReadonlyMap<string, WantedState>): boolean {
  for (const folder of foldersAbove(path)) if (wanted.get(folder)?.kind === "absent") return true;
  return false;
}

/** The folders above `path`, topmost first: `a`, `a/b` for `a/b/c`. */
function* foldersAbove(path: string): Generator<string> {
  for (let slash = path.indexOf("/"); slash > 0; slash = path.indexOf("/", slash + 1)) yield path.slice(0, slash);
}

/**
 * True when the place `path` (below a link, see `isSecondName`) lands at has a record of its own, or lies below
 * one: the capture records a path handed below a link where it lands too, so a second name always has one. One
 * without was not a second name when recorded: a link put there since, by someone else, over a folder the tape
 * knew. It is reported skipped, "below_link": the rewind neither writes through the link nor passes it over.
 */
async function landsOnRecord({ realWorkspace, wanted }: Places, path: string): Promise<boolean> {
  let folder: string;
  try {
    folder = await realpath(join(realWorkspace, dirname(path)));
  } catch {
    return false;
  }
  const landed = relative(realWorkspace, join(folder, basename(path)));
  if (landed === "" || landed.startsWith("..") || isAbsolute(landed)) return false;
  for (let p = landed; ; p = dirname(p)) {
    if (wanted.has(p)) return true;
    if (p === ".") return false;
  }
}
