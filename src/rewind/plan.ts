import { lstat, readdirTyped } from "../core/named-fs.js";
import { join } from "node:path";
import type { StorageBackend } from "../backend/types.js";
import type { FileChange, FileSnapshot, RewindPayload, StoredEvent } from "../core/events.js";
import { isAgentTapeError } from "../core/errors.js";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { sliceIsLong, yieldIfLong } from "../core/time-slices.js";
import { ownerOf, snapshotPaths, type Snapshot, type SnapshotLimits } from "../checkpoint/snapshot.js";
import { readVerifiedBlob } from "../blobs/store-then-reference.js";
import { snapshotsIn } from "../blobs/references.js";
import { confine, type ParentLooks } from "../checkpoint/confine.js";
import { placeRecord, type Places } from "./plan-places.js";
import type { WantedState } from "./wanted-state.js";

export type { WantedState } from "./wanted-state.js";

/**
 * The rewind rule (docs/ARCHITECTURE.md, "Rewind intent"): visit the snapshots taken after the
 * target, closest to it first, and keep the first one per path — the content that path had at the
 * target. Newer snapshots of the same path are ignored. `events` must be the events after the
 * target, in sequence order.
 * A rewind marker's undo snapshot counts only for a "files" rewind (or its undo), which changed
 * the files and kept the log. A rewind that cut the log also cut the events that had made its
 * undo snapshot: along the log that remains, such a marker changes nothing, and its snapshot is
 * the state of no point in it (using it would bring back the files the rewind took away).
 */
export async function closestSnapshotPerPath(events: Iterable<StoredEvent>): Promise<Map<string, WantedState>> {
  const closest = new Map<string, WantedState>();
  const takenAt = new Map<string, number>(); // path -> index of the event its closest snapshot is from
  const listings = new Map<string, number>(); // complete folder listings kept as closest, by event index
  const nonFolders = new Map<string, number>(); // absent paths, files and links kept as closest, by event index
  const laterListings = new Map<string, number>(); // a folder's first listing after a closest that is not one
  const notKept = new Map<string, number>(); // paths kept as not_kept, by event index
  const rewindAt = new Map<number, number>(); // event index -> sequence, of rewinds that made paths not_kept
  let index = 0;
  for (const event of events) {
    // A 1,000-file rewind's 3,000 events and the pass below took 10-20 ms of one call (docs/ARCHITECTURE.md,
    // "Batched file work", time slices).
    if (++index % 256 === 0 && sliceIsLong()) await yieldIfLong();
    if (event.type === "session_rewind") {
      const payload = event.payload as RewindPayload;
      for (const path of notKeptBy(payload))
        if (!closest.has(path)) {
          closest.set(path, { path, kind: "not_kept", rewind: event.sequence });
          takenAt.set(path, index);
          notKept.set(path, index);
          rewindAt.set(index, event.sequence);
        }
      if (payload.mode !== "files") continue;
    }
    for (const file of snapshotsIn(event)) {
      if (closest.has(file.path)) {
        // A record of it as absent, a file or a link lists it too: as holding nothing.
        const lists = (file.kind === "directory" && file.complete) || nonFolderKind(file.kind);
        if (lists && !listings.has(file.path) && !laterListings.has(file.path)) laterListings.set(file.path, index);
        continue;
      }
      closest.set(file.path, file);
      takenAt.set(file.path, index);
      if (file.kind === "directory" && file.complete) listings.set(file.path, index);
      else if (nonFolderKind(file.kind)) nonFolders.set(file.path, index);
    }
  }
  // A folder whose closest record says nothing of what it held (a command's, which leaves ignored entries out)
  // and that a later capture listed whole (or recorded absent, a file or a link: holding nothing) held at the
  // target what that listing names, and what was recorded in between: a path recorded first after it, or on no
  // record at all, was not there (a change to it before the listing would have been recorded). So it is a
  // complete listing as of that capture.
  for (const [path, at] of laterListings) {
    const record = closest.get(path);
    if (record?.kind !== "directory") continue;
    closest.set(path, { ...record, complete: true });
    listings.set(path, at);
  }
  // A path below a complete listing that the listing did not name did not exist when it was taken; a
  // snapshot of it from later on (a tool editing what a command had created) is not its state at the target.
  // Nor did a path below one that was absent, a file or a link (a folder a tool was handed absent and made,
  // listed by a later capture). Below a path not kept, a snapshot from later on is of what that rewind left, not
  // of the target: not kept either. The earliest of these records above a path decides.
  let looked = 0;
  if (listings.size > 0 || nonFolders.size > 0 || notKept.size > 0)
    for (const [path, at] of takenAt) {
      if (++looked % 256 === 0 && sliceIsLong()) await yieldIfLong();
      const above = recordsAbove(path, listings, nonFolders, notKept);
      const earlier = (found: number | undefined) => (found !== undefined && found < at ? found : Infinity);
      const absentFrom = Math.min(earlier(above[0]), earlier(above[1]));
      const notKeptFrom = earlier(above[2]);
      if (notKeptFrom < absentFrom) closest.set(path, { path, kind: "not_kept", rewind: rewindAt.get(notKeptFrom)! });
      else if (absentFrom < Infinity) closest.set(path, { path, kind: "absent" });
    }
  return closest;
}

/**
 * The paths whose state just before this rewind the tape keeps nowhere: those a "files" rewind made with keepUndo 0
 * changed (it keeps no undo snapshot), and those any rewind skipped for that reason (it left them as such a rewind
 * made them; a rewind "all" that did so cut that rewind's marker, the one record of it).
 */
function notKeptBy(payload: RewindPayload): string[] {
  const unkept = payload.mode === "files" && payload.undo === undefined;
  return payload.changes
    .filter((c) => (c.action === "skip" ? c.reason === "undo_not_kept" : unkept))
    .map((c) => c.path);
}

/** Whether a record of this kind says the path held nothing below it. */
function nonFolderKind(kind: WantedState["kind"]): boolean {
  return kind === "absent" || kind === "blob" || kind === "symlink";
}

/** For each of `maps` (paths to event indexes), the index of the nearest path strictly above `path`: one walk up. */
function recordsAbove(path: string, ...maps: ReadonlyMap<string, number>[]): (number | undefined)[] {
  const found: (number | undefined)[] = maps.map(() => undefined);
  let left = maps.filter((m) => m.size > 0).length;
  for (let p = path; p !== "." && left > 0; ) {
    const slash = p.lastIndexOf("/");
    p = slash === -1 ? "." : p.slice(0, slash);
    for (const [i, map] of maps.entries()) {
      if (found[i] !== undefined) continue;
      const at = map.get(p);
      if (at !== undefined) {
        found[i] = at;
        left--;
      }
    }
  }
  return found;
}

/** One path's planned change: the change as reported, and the record to make true on disk. */
export interface PlannedChange extends FileChange {
  /** What the path must become (restore/delete); absent for a skip. */
  becomes?: FileSnapshot;
  /** The unified diff from the file now to what it `becomes`, when asked for (see `diffPlannedChanges`). */
  patch?: string;
}

export interface FilePlan {
  changes: PlannedChange[];
  /** Verified bytes of every blob a restore needs, by hash. */
  blobs: Map<string, Buffer>;
  /** The current state of every path that will change: the undo snapshot. */
  current: Snapshot;
}

/**
 * Decides, per path, what a rewind (or an undo) must do to make the workspace match `wanted`:
 * restore, delete, or skip with a reason. Paths already as wanted are left out. Nothing is
 * written. Paths that no longer lie inside the workspace (a tampered log, a symlink swapped in
 * since) are skipped, as are snapshots that were themselves skipped at capture and blobs that
 * are missing or damaged — a rewind never restores from anything but the closest snapshot.
 */
export async function planFileChanges(
  backend: StorageBackend,
  sessionId: string,
  realWorkspace: string,
  givenWorkspace: string,
  wantedAtTarget: Map<string, WantedState>,
  limits: SnapshotLimits,
): Promise<FilePlan> {
  const changes: PlannedChange[] = [];
  const blobs = new Map<string, Buffer>();
  const candidates: { path: string; becomes: FileSnapshot }[] = [];

  // Each path is placed and its blob read and verified independently, `concurrency` at a time.
  const blobReads = new Map<string, Promise<Buffer>>();
  const readOnce = (hash: string, bytes: number) => {
    let read = blobReads.get(hash);
    if (!read) blobReads.set(hash, (read = readVerifiedBlob(backend, sessionId, hash, { bytes })));
    return read;
  };
  const looks: ParentLooks = new Map();
  const wanted = withoutBelowNonFolders(
    await withUnlistedAbsent(realWorkspace, givenWorkspace, wantedAtTarget, limits, looks),
  );
  const places: Places = { realWorkspace, givenWorkspace, wanted, looks };
  await forEachLimited([...wanted], limits.concurrency, async ([recordedPath, becomes]) => {
    const place = await placeRecord(places, recordedPath, becomes);
    if (place === undefined) return;
    if ("action" in place) {
      changes.push(place);
      return;
    }
    if (place.path === "." && becomes.kind !== "directory") {
      // Only a tampered record asks this: replacing or deleting the workspace itself would wipe it.
      changes.push({ path: ".", action: "skip", reason: "workspace_root" });
      return;
    }
    if (becomes.kind === "not_kept") {
      changes.push({ path: place.path, action: "skip", reason: "undo_not_kept" });
      return;
    }
    if (becomes.kind === "skipped") {
      changes.push({ path: place.path, action: "skip", reason: `not captured (${becomes.reason})` });
      return;
    }
    if (becomes.kind === "blob") {
      try {
        blobs.set(becomes.blob, await readOnce(becomes.blob, becomes.bytes));
      } catch (error) {
        if (isAgentTapeError(error, "BLOB_NOT_FOUND"))
          changes.push({ path: place.path, action: "skip", reason: "blob_missing" });
        else if (isAgentTapeError(error, "BLOB_CORRUPT"))
          changes.push({ path: place.path, action: "skip", reason: "blob_corrupt" });
        else throw error;
        return;
      }
    }
    candidates.push({ path: place.path, becomes: { ...becomes, path: place.path } });
  });
  candidates.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  // What those paths are now: decides what changes, and is what an undo puts back.
  const current = await currentState(realWorkspace, candidates, limits);
  const changing = new Set<string>();
  const currentByPath = new Map(current.files.map((f) => [f.path, f]));
  // A path being replaced that is a link now has nothing below it of its own: what is read below it is what the
  // link leads to, which is neither "already right" nor the undo's to keep (an undo would delete through it).
  const replacedLinks = new Set<string>();
  for (const { path, becomes } of candidates) {
    // Sorted by path, so a folder's own decision comes before the paths below it.
    const now = isStrictlyBelowAny(path, replacedLinks) ? undefined : currentByPath.get(path);
    if (now && sameState(now, becomes)) continue;
    if (now?.kind === "symlink") replacedLinks.add(path);
    changing.add(path);
    changes.push({ path, action: becomes.kind === "absent" ? "delete" : "restore", becomes });
  }
  // Keep in the undo snapshot only what will change (and what lies below a folder that will).
  const kept = current.files.filter(
    (f) => isAtOrBelowAny(f.path, changing) && !isStrictlyBelowAny(f.path, replacedLinks),
  );
  // A set of the kept files' blobs first: looking each blob up in the kept files took 35-50 ms of one
  // uninterrupted call for a 1,000-file rewind (docs/ARCHITECTURE.md, "Batched file work").
  const keptHashes = new Set(kept.flatMap((f) => (f.kind === "blob" ? [f.blob] : [])));
  const keptBlobs = new Map([...current.blobs].filter(([hash]) => keptHashes.has(hash)));
  noteUnrecoverable(changes, kept);
  changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { changes, blobs, current: { ...current, files: kept, blobs: keptBlobs } }; // its stamps and link counts
}

/**
 * For each folder whose wanted state is a complete listing, what is in it now and was not listed did not
 * exist at the target: it is wanted absent. Only the topmost such entry is added (removing it removes what
 * is below). Folders are looked into only where confined inside the workspace, and only up to the folder
 * budget: past it, the rest is kept, as a partial listing would keep it.
 */
async function withUnlistedAbsent(
  realWorkspace: string,
  givenWorkspace: string,
  wanted: Map<string, WantedState>,
  limits: SnapshotLimits,
  looks: ParentLooks,
): Promise<Map<string, WantedState>> {
  const roots = [...wanted.values()].filter((s) => s.kind === "directory" && s.complete).map((s) => s.path);
  if (roots.length === 0) return wanted;
  const result = new Map(wanted);
  let budget = limits.maxDirectoryEntries;
  const queue = [...roots];
  while (queue.length > 0 && budget > 0) {
    const folder = queue.shift()!;
    const place = await confine(realWorkspace, folder, givenWorkspace, looks);
    if (!place.inside) continue;
    let entries: { name: string; isDirectory(): boolean }[];
    try {
      entries = await readdirTyped(place.path === "." ? realWorkspace : join(realWorkspace, place.path));
    } catch {
      continue; // not a folder now (or gone): the folder's own record restores it
    }
    for (const entry of entries) {
      if (--budget < 0) break;
      const path = folder === "." ? entry.name : `${folder}/${entry.name}`;
      const listed = wanted.get(path);
      if (!listed) result.set(path, { path, kind: "absent" });
      else if (listed.kind === "directory" && entry.isDirectory()) queue.push(path);
    }
  }
  return result;
}

/**
 * `wanted` without the records below a path wanted as a file or a link: at the target nothing of its own was
 * below it. The closest records of such paths can come from a later snapshot than their parent's (an undo
 * snapshot keeps nothing below a link it replaces, the next one may list a folder there); restoring them would
 * write through the link, or into a file (docs/ARCHITECTURE.md, "Rewind intent"). Apply drops them as well, but
 * only below the paths that change. Records below a path wanted absent stay: deleting them is what it says.
 */
function withoutBelowNonFolders(wanted: Map<string, WantedState>): Map<string, WantedState> {
  const nonFolders = new Set<string>();
  for (const [path, snapshot] of wanted)
    if (snapshot.kind === "blob" || snapshot.kind === "symlink") nonFolders.add(path);
  if (nonFolders.size === 0) return wanted;
  const kept = new Map<string, WantedState>();
  for (const [path, snapshot] of wanted) if (!isStrictlyBelowAny(path, nonFolders)) kept.set(path, snapshot);
  return kept;
}

async function currentState(
  realWorkspace: string,
  candidates: { path: string; becomes: FileSnapshot }[],
  limits: SnapshotLimits,
): Promise<Snapshot> {
  // A folder that is to stay a folder only needs its own mode, not everything below it.
  const shallow: FileSnapshot[] = [];
  const deep: string[] = [];
  for (const { path, becomes } of candidates) {
    if (becomes.kind === "directory") {
      try {
        const info = await lstat(path === "." ? realWorkspace : `${realWorkspace}/${path}`);
        if (info.isDirectory()) {
          shallow.push({ path, kind: "directory", mode: info.mode & 0o7777, ...ownerOf(info) });
          continue;
        }
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") {
          shallow.push({ path, kind: "absent" });
          continue;
        }
      }
    }
    deep.push(path);
  }
  const snapshot = await snapshotPaths(realWorkspace, realWorkspace, deep, limits);
  return {
    files: [...shallow, ...snapshot.files],
    blobs: snapshot.blobs,
    stamps: snapshot.stamps ?? new Map(),
    linked: snapshot.linked ?? new Set(),
  };
}

function sameState(a: FileSnapshot, b: FileSnapshot): boolean {
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case "absent":
      return true;
    case "blob":
      return b.kind === "blob" && a.blob === b.blob && a.mode === b.mode && sameOwner(a, b);
    case "symlink":
      return b.kind === "symlink" && a.target === b.target && sameOwner(a, b);
    case "directory":
      return b.kind === "directory" && a.mode === b.mode && sameOwner(a, b);
    default:
      return false;
  }
}

// Content these records stand for was not read, so an undo could not give it back. A FIFO, socket or
// device (not_a_regular_file) holds no content to lose; a path seen through a link outside is never touched.
const LOST_WHEN_CHANGED = new Set(["too_large", "unreadable", "over_budget"]);

/**
 * Marks each change with what it would overwrite or delete beyond recall: the skipped records of the
 * undo snapshot at or below its path (docs/ARCHITECTURE.md, "Confinement").
 */
function noteUnrecoverable(changes: PlannedChange[], kept: readonly FileSnapshot[]): void {
  const byPath = new Map(changes.filter((c) => c.action !== "skip").map((c) => [c.path, c]));
  for (const record of kept) {
    if (record.kind !== "skipped" || !LOST_WHEN_CHANGED.has(record.reason)) continue;
    let p = record.path;
    let change = byPath.get(p);
    while (!change && p !== ".") {
      const slash = p.lastIndexOf("/");
      p = slash === -1 ? "." : p.slice(0, slash);
      change = byPath.get(p);
    }
    if (!change) continue;
    const lost = { path: record.path, reason: record.reason, ...(record.detail ? { detail: record.detail } : {}) };
    (change.unrecoverable ??= []).push(lost);
  }
}

/** True when `path` is one of `roots` or lies below one of them. */
export function isAtOrBelowAny(path: string, roots: ReadonlySet<string>): boolean {
  if (roots.has(".")) return true;
  for (let p = path; ; ) {
    if (roots.has(p)) return true;
    const slash = p.lastIndexOf("/");
    if (slash === -1) return false;
    p = p.slice(0, slash);
  }
}

/** True when a folder strictly above `path` is one of `roots`. */
export function isStrictlyBelowAny(path: string, roots: ReadonlySet<string>): boolean {
  if (roots.size === 0 || path === ".") return false;
  if (roots.has(".")) return true;
  for (let slash = path.lastIndexOf("/"); slash > 0; slash = path.lastIndexOf("/", slash - 1))
    if (roots.has(path.slice(0, slash))) return true;
  return false;
}

/**
 * Owners recorded on both sides must be the same; a record without one (a tape written before owners were
 * recorded) leaves the owner as it is, so it is not compared.
 */
function sameOwner(a: Owned, b: Owned): boolean {
  return a.uid === undefined || b.uid === undefined || (a.uid === b.uid && a.gid === b.gid);
}

type Owned = { uid?: number | undefined; gid?: number | undefined };
