import type { BigIntStats } from "node:fs";
import { lstatSync, readdirSync } from "../../core/named-fs.js";
import { WorkspaceTooLargeError } from "../../core/errors.js";
import type { FolderListing, IndexEntry } from "./index-entry.js";
import type { InPlace, Known, WalkHooks, WalkLimits, Walked } from "./walk-types.js";
import type { IgnoreRules, Scope } from "./ignore-rules.js";
import { readGitignore } from "./read-gitignore.js";
import { entryOf, folderStatOf, kindOfMode, type Lstat, sameStatAs, stillHolds } from "./stat-entries.js";
import { SEEN, SEEN_FIELDS, STAT_AHEAD_FROM, sameAsSeen, statAhead, type StatsAhead } from "./stat-ahead.js";
import { PreviousInOrder } from "./previous-in-order.js";
import { revertWalk } from "./revert-walk.js";
import { depthOf, isBelow, joined, parentOf } from "./tree-paths.js";
import { throwIfOutOfDescriptors } from "../../core/out-of-descriptors.js";

export { entryOf, RACY_WINDOW_NS } from "./stat-entries.js";
export type { InPlace, Known, WalkHooks, WalkLimits, Walked } from "./walk-types.js";

// The walk's stats are synchronous: an async lstat per file adds a thread-pool hop and a promise to each, and the
// walk is the cost every command pays (bench "shell command changing 1 file @10k vs 2 bare stat walks"). It yields
// to the event loop every YIELD_EVERY entries so a lock lease's timer still runs.
const YIELD_EVERY = 2000;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Lists every tracked path below `realWorkspace` with what lstat says of it, never following a
 * symlink and leaving out what `rules` ignore. Reads nothing but folder listings and `.gitignore`
 * files; a folder whose stat is what it was when `known` listed it, outside the racy window, is
 * not listed again (its files are still each lstat'ed: a change of content does not touch the
 * folder). Throws WORKSPACE_TOO_LARGE as soon as a limit is passed, before anything is stored.
 * `statAheadFrom` and `plainInodesUpTo`: see stat-ahead.ts (tests move them to take one way or the other).
 */
export async function walkWorkspace(
  realWorkspace: string,
  rules: IgnoreRules,
  limits: WalkLimits,
  known: Known = { entries: new Map() },
  hooks?: WalkHooks,
  statAheadFrom = STAT_AHEAD_FROM,
  plainInodesUpTo?: number,
): Promise<Walked> {
  const walk = new Walk(realWorkspace, limits, known, hooks, new Map(), new Map(), new Map(), new Set());
  await walk.walkAll(rules, statAheadFrom, plainInodesUpTo);
  return walk.result(walk.foundAgain);
}

/**
 * {@link walkWorkspace} from an index whose entries it changes in place, as {@link walkChangedFolders} does: a later
 * scan that built a new map of every path spent a sixth of its time putting 50k entries into it (docs/ARCHITECTURE.md,
 * "Workspace index", a later whole walk). An entry found unchanged is not touched; what changed, was added or is gone
 * is recorded in `Walked.prior` (to revert). What the walk did not meet is removed at its end, except below a path
 * it could not list or lstat (kept, as by a scan).
 */
export async function walkWholeInPlace(
  realWorkspace: string,
  rules: IgnoreRules,
  limits: WalkLimits,
  known: Known & { entries: Map<string, IndexEntry> },
  hooks?: WalkHooks,
  statAheadFrom = STAT_AHEAD_FROM,
  plainInodesUpTo?: number,
): Promise<Walked> {
  const walk = new Walk(realWorkspace, limits, known, hooks, known.entries, new Map(), new Map(), new Set(), new Map());
  walk.inPlaceWhole();
  try {
    await walk.walkAll(rules, statAheadFrom, plainInodesUpTo);
    walk.removeNotMet();
  } catch (error) {
    walk.revert();
    throw error;
  }
  return walk.result(walk.foundAgain);
}

/**
 * Like {@link walkWorkspace}, for a workspace whose every change since `known` was taken lies in
 * `changed` folders (a watcher said so): those folders are listed again and what they hold
 * lstat'ed; a folder new to the index is walked whole; everything else is taken from `known`.
 * Files with more than one link have their folders listed again too (another name may have been
 * written). Returns undefined when `known` lacks the listing or ignore scope of a changed folder (an
 * index loaded from its record has neither), or when a file is found with a link it did not have (where
 * are its other names?) or a `.gitignore` changed (its rules reach the whole subtree).
 */
export async function walkChangedFolders(
  realWorkspace: string,
  rules: IgnoreRules,
  limits: WalkLimits,
  known: InPlace,
  changed: ReadonlySet<string>,
  hooks: WalkHooks,
): Promise<Walked | undefined> {
  const { entries, folders, scopes, linked } = known;
  const walk = new Walk(realWorkspace, limits, known, hooks, entries, folders, scopes, linked, new Map());
  try {
    if (known.ignored !== undefined) walk.ignored = new Map(known.ignored);
    if (known.bytes !== undefined) walk.bytes = known.bytes;
    else for (const entry of walk.entries.values()) walk.count(undefined, entry);
    const relisted = new Set(changed);
    for (const path of linked) relisted.add(parentOf(path));
    // Shallowest first: a folder a parent's listing finds replaced is walked whole, and not again.
    const order = [...relisted].sort((a, b) => depthOf(a) - depthOf(b));
    for (const folder of order)
      if (!(await walk.relist(folder, rules)) || walk.doubt) {
        walk.revert();
        return undefined;
      }
  } catch (error) {
    walk.revert();
    throw error;
  }
  return walk.result(-1);
}

/** An lstat that failed other than "no such file" (lstatHere). */
const FAILED = Symbol("failed");

interface Queued {
  path: string;
  absolute: string;
  /** The rules in force in the folder's parent. */
  scope: Scope;
  stat: Lstat | undefined;
}

/** One walk's state: what it found so far, and its two ways of finding more. */
class Walk {
  readonly differing: string[] = [];
  readonly unlisted: string[] = [];
  /** Folders walked whole in this walk: nothing below them needs listing again. */
  private readonly whole: string[] = [];
  foundAgain = 0;
  bytes = 0;
  ignored = new Map<string, IndexEntry>();
  /**
   * An in-place walk found what only a whole walk can follow: a file with more than one link not known
   * to have them (where are its other names?), or a `.gitignore` changed without an event naming it
   * (written through another name): its rules reach the whole subtree.
   */
  doubt = false;
  /** Stats of the names of folders whose listing held, taken on helper threads as the walk goes (stat-ahead.ts). */
  ahead: StatsAhead | undefined;
  private sinceYield = 0;
  private listed = 0;
  private statted = 0;
  private statsAhead = 0;
  private readonly nowNs = BigInt(Date.now()) * 1_000_000n;

  constructor(
    private readonly workspace: string,
    private readonly limits: WalkLimits,
    private readonly known: Known,
    private readonly hooks: WalkHooks | undefined,
    readonly entries: Map<string, IndexEntry>,
    private readonly folders: Map<string, FolderListing>,
    private readonly scopes: Map<string, Scope>,
    private readonly linked: Set<string>,
    /** With an in-place walk: what each changed path held before it (undefined: added). */
    private readonly prior?: Map<string, IndexEntry | undefined>,
  ) {
    if (prior === undefined) this.inOrder = new PreviousInOrder(known.entries);
  }

  /** The previous entries, in the order the last walk set them, for a whole walk (previous-in-order.ts). */
  private inOrder: PreviousInOrder | undefined;
  /** A whole walk in place (walkWholeInPlace): it removes at its end the previous paths it did not meet. */
  private wholeInPlace = false;
  /** Entries a whole walk in place kept or set: its size, for the limit (the map still holds those not met yet). */
  private tracked = 0;

  /** Makes this a whole walk of `known.entries` in place (see walkWholeInPlace). */
  inPlaceWhole(): void {
    this.inOrder = new PreviousInOrder(this.entries);
    this.wholeInPlace = true;
  }

  /** A walk of changed folders (walkChangedFolders), which may doubt what it cannot follow. */
  private get relisting(): boolean {
    return this.prior !== undefined && !this.wholeInPlace;
  }

  /** What `path` held before this walk. */
  private priorOf(path: string): IndexEntry | undefined {
    // A whole walk meets each path once, so the map (changed in place or not) still holds what it held before.
    if (this.inOrder !== undefined) return this.inOrder.get(path);
    return this.prior!.has(path) ? this.prior!.get(path) : this.entries.get(path);
  }

  /** The end of a whole walk in place: what it did not meet is gone, unless below a path it could not look at. */
  removeNotMet(): void {
    if (this.inOrder === undefined || this.foundAgain === this.inOrder.size) return;
    for (const path of this.inOrder.notMet()) if (!this.belowUnlisted(path)) this.deleteEntry(path);
  }

  private belowUnlisted(path: string): boolean {
    return this.unlisted.some((dir) => dir === "" || path.startsWith(`${dir}/`));
  }

  private setEntry(path: string, entry: IndexEntry): void {
    if (this.prior !== undefined && !this.prior.has(path)) this.prior.set(path, this.entries.get(path));
    this.entries.set(path, entry);
  }

  private deleteEntry(path: string): void {
    if (this.prior !== undefined && !this.prior.has(path)) this.prior.set(path, this.entries.get(path));
    this.entries.delete(path);
  }

  revert(): void {
    if (this.prior !== undefined) revertWalk(this.entries, this.prior);
  }

  result(foundAgain: number): Walked {
    const { entries, unlisted, folders, scopes, linked, listed, statted, statsAhead, bytes, prior, ignored } = this;
    // A folder relisted after its parent's listing already took its new stat would be here twice.
    const differing = this.differing.length > 1 ? [...new Set(this.differing)] : this.differing;
    const walked: Walked = {
      entries,
      differing,
      foundAgain,
      unlisted,
      folders,
      scopes,
      linked,
      listed,
      statted,
      statsAhead,
      bytes,
      ignored,
    };
    if (prior !== undefined) walked.prior = prior;
    return walked;
  }

  /** Walks the whole workspace, the stats of its names taken ahead when the index is large enough (stat-ahead.ts). */
  async walkAll(rules: IgnoreRules, statAheadFrom: number, plainInodesUpTo?: number): Promise<void> {
    let root: Lstat | undefined;
    try {
      root = lstatSync(this.workspace, { bigint: true, throwIfNoEntry: false });
    } catch {
      root = undefined;
    }
    const { folders } = this.known;
    if (folders !== undefined && this.known.entries.size >= statAheadFrom)
      this.ahead = statAhead(this.workspace, folders, root, plainInodesUpTo);
    await this.below({ path: "", absolute: this.workspace, scope: rules.root(), stat: root }, rules);
  }

  /** Walks `start` and everything below it. */
  async below(start: Queued, rules: IgnoreRules): Promise<void> {
    this.whole.push(start.path);
    const queue: Queued[] = [start];
    while (queue.length > 0) {
      const dir = queue.pop()!;
      const fresh = dir.stat !== undefined && this.hooks?.beforeListing(dir.path, dir.stat.ino) === true;
      let names: string[];
      const listing = this.known.folders?.get(dir.path);
      let held: FolderListing | undefined;
      if (!fresh && listing !== undefined && dir.stat !== undefined && stillHolds(listing, dir.stat)) {
        names = listing.names;
        held = listing;
        this.folders.set(dir.path, listing);
      } else {
        const listed = this.list(dir);
        if (listed === undefined) continue;
        names = listed;
      }
      const scope = this.scopeInside(dir, names, rules);
      // A listing that held keeps its paths: the same strings as the keys of the entries, each hashed once.
      const paths = held === undefined ? undefined : (held.paths ??= names.map((name) => joined(dir.path, name)));
      const pending = held === undefined ? undefined : this.ahead?.pending(dir.path);
      if (pending !== undefined) await pending;
      const seen = held === undefined ? undefined : this.ahead?.seen(dir.path, held);
      for (let i = 0; i < names.length; i++) {
        const name = names[i]!;
        const at = seen === undefined ? -1 : seen.at + i * SEEN_FIELDS;
        const ahead = at >= 0 && seen!.stats[at + SEEN.taken] === 1 ? seen!.stats : undefined;
        const found = this.visit(dir.path, dir.absolute, name, scope, rules, paths?.[i], ahead, at);
        if (found?.kind === "directory")
          queue.push({ path: found.path, absolute: `${dir.absolute}/${name}`, scope, stat: found.info });
        if (this.dueToYield()) await nextTurn();
      }
    }
  }

  /**
   * Lists `folder` again and lstats what it holds; a name gone takes what was below it, a folder
   * new (or replaced) is walked whole. False when the listing or scope to start from is missing.
   */
  async relist(folder: string, rules: IgnoreRules): Promise<boolean> {
    if (this.whole.some((top) => isBelow(folder, top))) return true;
    const before = this.entries.get(folder);
    if (folder !== "" && before?.kind !== "directory") return true; // gone or untracked: its parent is listed
    const listing = this.folders.get(folder);
    const scope = this.scopes.get(folder);
    if (listing === undefined || scope === undefined) return false;
    const absolute = folder === "" ? this.workspace : `${this.workspace}/${folder}`;
    let info: BigIntStats | undefined;
    try {
      info = lstatSync(absolute, { bigint: true, throwIfNoEntry: false });
    } catch {
      info = undefined;
    }
    // Gone, or another folder now: its parent's listing tells (a workspace replaced: walk it).
    if (info === undefined || !info.isDirectory() || info.ino !== listing.ino) return folder !== "";
    if (before !== undefined) this.restat(folder, before, info);
    const dir: Queued = { path: folder, absolute, scope, stat: info };
    this.hooks?.beforeListing(folder, info.ino);
    const names = this.list(dir);
    if (names === undefined) return true;
    for (const path of [...this.ignored.keys()]) if (parentOf(path) === folder) this.ignored.delete(path);
    const now = new Set(names);
    for (const name of listing.names) if (!now.has(name)) this.takeOut(joined(folder, name));
    for (const name of names) {
      const path = joined(folder, name);
      const previous = this.entries.get(path);
      const found = this.visit(folder, absolute, name, scope, rules);
      if (found === undefined) {
        if (previous !== undefined && !this.entries.has(path)) this.takeOut(path); // ignored or vanished now
      } else if (found.entry !== previous) {
        const sameFolder =
          previous?.kind === "directory" && found.kind === "directory" && previous.ino === found.info?.ino;
        if (previous?.kind === "directory" && !sameFolder) this.takeOutBelow(path);
        // The same folder with a new stat: its own watch tells what changed in it. A new one is walked whole.
        if (found.kind === "directory" && !sameFolder)
          await this.below({ path, absolute: `${absolute}/${name}`, scope, stat: found.info }, rules);
      }
      if (this.dueToYield()) await nextTurn();
    }
    return true;
  }

  /**
   * Adds the entry of `dir/name`, unless ignored or gone; the stat is returned for a folder to enter. `ahead`: the
   * stats taken ahead on a helper thread (stat-ahead.ts), this name's at `at`, trusted only to say "unchanged";
   * where they do not, the name is lstat'ed here, and its entry made of that.
   */
  private visit(
    dirPath: string,
    dirAbsolute: string,
    name: string,
    scope: Scope,
    rules: IgnoreRules,
    knownPath?: string,
    ahead?: Float64Array,
    at = 0,
  ): { path: string; kind: IndexEntry["kind"]; info: Lstat | undefined; entry: IndexEntry } | undefined {
    const path = knownPath ?? joined(dirPath, name);
    let info: Lstat | undefined;
    if (ahead !== undefined) this.statsAhead++;
    else {
      const looked = this.lstatHere(path, `${dirAbsolute}/${name}`);
      if (looked === FAILED) return undefined;
      info = looked;
    }
    this.statted++;
    if (ahead === undefined && info === undefined) return undefined;
    // once: BigIntStats' isDirectory() and friends make BigInts per call
    let mode = info === undefined ? ahead![at + SEEN.mode]! : Number(info.mode);
    let kind = kindOfMode(mode);
    if (rules.ignores(scope, path, name, kind === "directory")) {
      if (!rules.isOwn(path)) {
        const looked = info ?? this.lstatHere(path, `${dirAbsolute}/${name}`);
        if (looked !== FAILED && looked !== undefined) this.ignored.set(path, entryOf(looked));
      }
      return undefined;
    }
    const before = this.priorOf(path);
    const same =
      before !== undefined &&
      (info === undefined ? sameAsSeen(before, ahead!, at, kind) : sameStatAs(before, info, kind, mode));
    let entry: IndexEntry;
    if (before !== undefined && !before.racy && same) entry = before;
    else {
      if (info === undefined) {
        // What the thread saw moved: the entry is made of an exact stat, taken now.
        const looked = this.lstatHere(path, `${dirAbsolute}/${name}`);
        if (looked === FAILED || looked === undefined) return this.lostAfterAhead(path, before);
        info = looked;
        mode = Number(info.mode);
        kind = kindOfMode(mode);
      }
      entry = entryOf(info);
      this.differing.push(path);
    }
    if (before !== undefined) this.foundAgain++;
    const links = info === undefined ? ahead![at + SEEN.nlink]! : Number(info.nlink);
    if (kind === "file" && links > 1) {
      if (this.relisting && !this.linked.has(path)) this.doubt = true;
      this.linked.add(path);
    }
    // Its stat, not its racy flag: a `.gitignore` written in the last 2 s is looked at again on every scan.
    if (this.relisting && name === ".gitignore" && before !== undefined && !same) this.doubt = true;
    if (this.wholeInPlace) {
      // A whole walk in place: the entry found unchanged is the one in the map already.
      this.tracked++;
      this.count(undefined, entry);
      if (entry !== before) this.setEntry(path, entry);
    } else {
      // A whole walk meets each path once, into a map of its own: nothing there to replace.
      this.count(this.prior === undefined ? undefined : this.entries.get(path), entry);
      this.setEntry(path, entry);
    }
    // A folder found unchanged ahead is entered with its entry's stat: the same, to the nanosecond.
    return { path, kind, info: info ?? (kind === "directory" ? folderStatOf(entry) : undefined), entry };
  }

  // The lstat of a name here, undefined when gone; FAILED when its folder vanished or became a file since the listing
  // (not there), or it could not be looked at (EACCES, ENAMETOOLONG: not "gone", so the index keeps what it knew).
  private lstatHere(path: string, absolute: string): BigIntStats | undefined | typeof FAILED {
    try {
      return lstatSync(absolute, { bigint: true, throwIfNoEntry: false });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") this.unlisted.push(path);
      return FAILED;
    }
  }

  /** A name the thread saw changed, then not found by an lstat here, its previous entry taken: as if not met. */
  private lostAfterAhead(path: string, before: IndexEntry | undefined): undefined {
    if (before !== undefined && this.wholeInPlace && !this.belowUnlisted(path)) this.deleteEntry(path);
    return undefined;
  }

  /** A relisted folder's own entry, when its stat moved (a name added or removed changes its times). */
  private restat(folder: string, before: IndexEntry, info: BigIntStats): void {
    const mode = Number(info.mode);
    if (sameStatAs(before, info, kindOfMode(mode), mode)) return;
    const entry = entryOf(info);
    this.differing.push(folder);
    this.setEntry(folder, entry);
  }

  /** Keeps the running totals as `entry` takes the place of `replaced`; throws past a limit. */
  count(replaced: IndexEntry | undefined, entry: IndexEntry): void {
    if (replaced?.kind === "file" && replaced.size <= this.limits.maxFileBytes) this.bytes -= replaced.size;
    if (entry.kind === "file" && entry.size <= this.limits.maxFileBytes) this.bytes += entry.size;
    const size = this.wholeInPlace ? this.tracked : this.entries.size;
    if (size > this.limits.maxFiles || this.bytes > this.limits.maxBytes)
      throw new WorkspaceTooLargeError(this.workspace, size, this.bytes, {
        maxFiles: this.limits.maxFiles,
        maxBytes: this.limits.maxBytes,
      });
  }

  private list(dir: Queued): string[] | undefined {
    let names: string[];
    try {
      names = readdirSync(dir.absolute);
    } catch (error) {
      throwIfOutOfDescriptors(error); // not "unlisted": what changed below it would be missed
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") this.unlisted.push(dir.path);
      return undefined;
    }
    this.listed++;
    if (dir.stat !== undefined && kindOfMode(Number(dir.stat.mode)) === "directory")
      this.folders.set(dir.path, {
        mtimeNs: dir.stat.mtimeNs,
        ctimeNs: dir.stat.ctimeNs,
        ino: dir.stat.ino,
        names,
        listedAtNs: this.nowNs,
      });
    return names;
  }

  private scopeInside(dir: Queued, names: readonly string[], rules: IgnoreRules): Scope {
    const scope = names.includes(".gitignore")
      ? rules.inside(dir.scope, dir.path, readGitignore(`${dir.absolute}/.gitignore`))
      : dir.scope;
    this.scopes.set(dir.path, scope);
    return scope;
  }

  /** Takes `path` out of the walk's entries, with everything below it. */
  private takeOut(path: string): void {
    const entry = this.entries.get(path);
    if (entry === undefined) return;
    if (entry.kind === "directory") this.takeOutBelow(path);
    if (entry.kind === "file" && entry.size <= this.limits.maxFileBytes) this.bytes -= entry.size;
    this.linked.delete(path);
    this.deleteEntry(path);
  }

  private takeOutBelow(folder: string): void {
    const listing = this.folders.get(folder);
    if (listing !== undefined) for (const name of listing.names) this.takeOut(joined(folder, name));
    else for (const path of [...this.entries.keys()]) if (isBelow(path, folder) && path !== folder) this.takeOut(path);
    this.folders.delete(folder);
    this.scopes.delete(folder);
    for (const path of [...this.ignored.keys()]) if (isBelow(path, folder)) this.ignored.delete(path);
  }

  // Asked at each entry, awaited only when due: an `await` of each of 50k entries was a promise and a turn each.
  private dueToYield(): boolean {
    if (++this.sinceYield < YIELD_EVERY) return false;
    this.sinceYield = 0;
    return true;
  }
}
