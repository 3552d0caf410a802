import { closeSync, constants, existsSync, readFileSync, type Stats } from "node:fs";
import { lstat, lstatSync, mkdir, mkdirSync, openSync, readdir, readdirSync, readlinkSync } from "../core/named-fs.js";
import { yieldIfLong } from "../core/time-slices.js";
import { join } from "node:path";
import { confine, isInside } from "./confine.js";
import { keptFolderBudget } from "./folder-budget.js";

/** What {@link HeldWorkspace.at} returns when the folder holding a path leads outside the workspace. */
export const OUTSIDE: unique symbol = Symbol("outside the workspace");

// Linux names the entries of the folder behind an open descriptor as /proc/self/fd/N/name, resolved in exactly
// that folder whatever its path has become since. Elsewhere there is no such name for a descriptor's folder.
const HOLDS_FOLDERS = process.platform === "linux" && existsSync("/proc/self/fd");

// The first this many distinct folders of one operation are kept open to its end (an eighth of the process's
// descriptor limit, 16 to 4,096: folder-budget.ts): a step that walks every path again finds them open. Past them,
// only the few used last are kept (RECENT_FOLDERS), the oldest closed for a new one: paths come grouped by folder (a
// plan's order, a folder's listing), so a folder's next use most often follows its last. Without those, past 256
// folders every folder was opened, checked and closed again at each use; with only the last used kept, a second walk
// over more folders than that found none of them open. A fixed 256 had a 1,000-file rewind over 500 folders open
// the other 244 again at each walk (a fifth of its time: docs/ARCHITECTURE.md, "Batched file work"), and took all
// the descriptors of a process allowed fewer.
const MAX_KEPT_FOLDERS = keptFolderBudget(HOLDS_FOLDERS ? processLimits() : undefined);
const RECENT_FOLDERS = 16;

interface Held {
  fd: number;
  uses: number;
  forgotten: boolean;
}

/**
 * The workspace held open for one operation (a capture, a rewind's apply), so that code racing it in the
 * workspace cannot turn a path checked inside into one used outside (docs/ARCHITECTURE.md, "Confinement").
 * Every path is reached through the folder that holds it, opened and then checked — the real path of the
 * open descriptor, not of the name looked up — and the entry is addressed inside that descriptor. A symlink
 * swapped in after the check changes nothing: the descriptor still is the folder that was checked.
 * Without /proc/self/fd (macOS, Windows) the folder's path is checked and then used: the window is small
 * but open, which the architecture document states.
 * Folders are opened and checked with synchronous calls (an open and a readlink: microseconds, where the
 * thread pool's round trip for each cost more than the call; docs/ARCHITECTURE.md, "Batched file work"), so
 * {@link atSync} can act on many paths in one turn of the event loop.
 */
export class HeldWorkspace {
  /** Kept to the end of the operation. */
  private readonly folders = new Map<string, Held>();
  /** Past MAX_KEPT_FOLDERS: the folders used last, in the order of their last use (the oldest first). */
  private readonly recent = new Map<string, Held>();

  // The workspace folder itself is named by its real path: that path's folders lie outside the workspace,
  // where its code cannot write, so only what lies below it needs holding.
  private constructor(
    readonly realWorkspace: string,
    private readonly holds: boolean,
  ) {}

  static async open(realWorkspace: string): Promise<HeldWorkspace> {
    return new HeldWorkspace(realWorkspace, HOLDS_FOLDERS);
  }

  /** True when entries are reached through held descriptors (Linux), false when by checked paths. */
  static get holdsFolders(): boolean {
    return HOLDS_FOLDERS;
  }

  /**
   * Runs `act` with a name for the entry `rel` (workspace-relative, `/`-separated) that resolves inside the
   * folder checked to hold it; the last component is not followed by anything that does not follow it by
   * itself (use lstat, O_NOFOLLOW, rename, unlink). Returns OUTSIDE, running nothing, when that folder is not
   * inside the workspace. With `create`, missing parent folders are made (each checked as it is made).
   * Throws what opening the parent threw otherwise (ENOENT when it does not exist, ENOTDIR, ...).
   */
  async at<T>(rel: string, act: (where: string) => Promise<T>, options: { create?: boolean } = {}) {
    if (rel === "." || rel === "") return this.folder("", (dir) => act(`${dir}/.`));
    const slash = rel.lastIndexOf("/");
    const parent = slash === -1 ? "" : rel.slice(0, slash);
    const name = rel.slice(slash + 1);
    return this.folder(parent, (dir) => act(`${dir}/${name}`), options);
  }

  /** Runs `act` with a name for the folder `rel` itself, checked inside; see {@link at}. */
  async folder<T>(rel: string, act: (dir: string) => Promise<T>, options: { create?: boolean } = {}) {
    if (!this.holds) return this.folderByPath(rel, act, options);
    if (rel === "" || rel === ".") return act(this.realWorkspace);
    const held = this.hold(rel, options.create ?? false);
    if (held === OUTSIDE) return OUTSIDE;
    held.uses++;
    try {
      return await act(fdPath(held.fd));
    } finally {
      this.release(held);
    }
  }

  /**
   * {@link at} with a synchronous `act`, run at once: only where folders are held (see {@link holdsFolders});
   * a caller elsewhere uses {@link at}.
   */
  atSync<T>(rel: string, act: (where: string) => T, options: { create?: boolean } = {}): T | typeof OUTSIDE {
    if (!this.holds) throw new Error("HeldWorkspace.atSync needs held folders (/proc/self/fd)");
    if (rel === "." || rel === "") return act(`${this.realWorkspace}/.`);
    const slash = rel.lastIndexOf("/");
    const parent = slash === -1 ? "" : rel.slice(0, slash);
    if (parent === "") return act(`${this.realWorkspace}/${rel}`);
    const held = this.hold(parent, options.create ?? false);
    if (held === OUTSIDE) return OUTSIDE;
    held.uses++;
    try {
      return act(`${fdPath(held.fd)}/${rel.slice(slash + 1)}`);
    } finally {
      this.release(held);
    }
  }

  /** The kept descriptor of folder `rel`, opened and checked if not kept yet; OUTSIDE when it leads outside. */
  private hold(rel: string, create: boolean): Held | typeof OUTSIDE {
    const kept = this.folders.get(rel);
    if (kept) return kept;
    const used = this.recent.get(rel);
    if (used) {
      this.recent.delete(rel); // moved to the end: used last
      this.recent.set(rel, used);
      return used;
    }
    let fd: number;
    try {
      fd = this.openFolder(rel, create);
    } catch (error) {
      if (error instanceof LeadsOutside) return OUTSIDE;
      throw error;
    }
    const held = { fd, uses: 0, forgotten: false };
    if (this.folders.size < MAX_KEPT_FOLDERS) this.folders.set(rel, held);
    else if (this.recent.size < RECENT_FOLDERS || this.closeLeastRecent()) this.recent.set(rel, held);
    else held.forgotten = true; // every recent one in use: closed after the use it was opened for
    return held;
  }

  /** Closes the recent folder used longest ago that is not in use now; false when every one is. */
  private closeLeastRecent(): boolean {
    for (const [key, held] of this.recent) {
      if (held.uses > 0) continue;
      this.recent.delete(key);
      closeQuietly(held.fd);
      return true;
    }
    return false;
  }

  private release(held: Held): void {
    if (--held.uses === 0 && held.forgotten) closeQuietly(held.fd);
  }

  /**
   * The entries of the folder `rel`, each with its lstat (or the error code lstat gave), the folder itself
   * opened without following a link in its place: a folder swapped for a link since it was looked at fails
   * (ELOOP) instead of listing wherever the link leads. OUTSIDE when its parent leads outside.
   * Where folders are held, with synchronous calls, the event loop given a turn between names once a slice has
   * run long: a round trip for each lstat made a folder snapshot cost ~0.3 ms a file (docs/ARCHITECTURE.md,
   * "Batched file work").
   */
  async list(rel: string): Promise<{ name: string; info?: Stats; error?: string }[] | typeof OUTSIDE> {
    return this.at(rel, async (where) => {
      if (!this.holds) return statEntries(where, await readdir(where));
      const fd = openSync(where, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      try {
        const dir = fdPath(fd);
        return await statEntriesNow(dir, readdirSync(dir));
      } finally {
        closeSync(fd);
      }
    });
  }

  /** Drops the kept descriptors of `rel` and every folder below it: it was removed or replaced. */
  forget(rel: string): void {
    for (const kept of [this.folders, this.recent])
      for (const [key, held] of kept) {
        if (key !== rel && !key.startsWith(`${rel}/`)) continue;
        kept.delete(key);
        held.forgotten = true;
        if (held.uses === 0) closeQuietly(held.fd);
      }
  }

  async close(): Promise<void> {
    for (const kept of [this.folders, this.recent]) {
      for (const held of kept.values()) {
        held.forgotten = true;
        if (held.uses === 0) closeQuietly(held.fd);
      }
      kept.clear();
    }
  }

  /** Opens `rel` (following links, as a parent is followed), then checks where the descriptor really is. */
  private openFolder(rel: string, create: boolean): number {
    let fd: number;
    try {
      fd = openSync(`${this.realWorkspace}/${rel}`, constants.O_RDONLY | constants.O_DIRECTORY);
    } catch (error) {
      if (!create || (error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      return this.makeFolder(rel);
    }
    let real: string;
    try {
      real = readlinkSync(fdPath(fd));
    } catch (error) {
      closeQuietly(fd);
      if ((error as NodeJS.ErrnoException).code === "ENAMETOOLONG") return this.openInParent(rel);
      throw error;
    }
    if (isInside(this.realWorkspace, real)) return fd;
    closeQuietly(fd);
    throw new LeadsOutside();
  }

  /**
   * A folder whose real path /proc cannot name (past PATH_MAX: readlink says ENAMETOOLONG) is checked another
   * way: it is opened without following a link inside its parent, held and checked itself, so it lies inside.
   */
  private openInParent(rel: string): number {
    const flags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
    const opened = this.atSync(rel, (where) => openSync(where, flags));
    if (opened === OUTSIDE) throw new LeadsOutside();
    return opened;
  }

  /** Makes the missing folders of `rel` one at a time, each inside the folder before it as checked. */
  private makeFolder(rel: string): number {
    const parts = rel.split("/");
    let parent = this.realWorkspace;
    let made: number | undefined;
    try {
      for (let i = 0; i < parts.length; i++) {
        try {
          mkdirSync(`${parent}/${parts[i]}`);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        }
        const next = this.openFolder(parts.slice(0, i + 1).join("/"), false);
        if (made !== undefined) closeQuietly(made);
        made = next;
        parent = fdPath(next);
      }
    } catch (error) {
      if (made !== undefined) closeQuietly(made);
      throw error;
    }
    return made!;
  }

  /** The fallback without held descriptors: the folder's path, checked, then used. */
  private async folderByPath<T>(rel: string, act: (dir: string) => Promise<T>, options: { create?: boolean }) {
    if (rel === "" || rel === ".") return act(this.realWorkspace);
    const place = await confine(this.realWorkspace, `${rel}/entry`);
    if (!place.inside) return OUTSIDE;
    const dir = join(this.realWorkspace, rel);
    if (options.create) await mkdir(dir, { recursive: true });
    return act(dir);
  }
}

async function statEntries(dir: string, names: string[]) {
  const entries: { name: string; info?: Stats; error?: string }[] = [];
  for (const name of names.sort()) {
    try {
      entries.push({ name, info: await lstat(`${dir}/${name}`) });
    } catch (error) {
      entries.push({ name, error: (error as NodeJS.ErrnoException).code ?? String(error) });
    }
  }
  return entries;
}

async function statEntriesNow(dir: string, names: string[]) {
  const entries: { name: string; info?: Stats; error?: string }[] = [];
  for (const name of names.sort()) {
    try {
      entries.push({ name, info: lstatSync(`${dir}/${name}`) });
    } catch (error) {
      entries.push({ name, error: (error as NodeJS.ErrnoException).code ?? String(error) });
    }
    await yieldIfLong();
  }
  return entries;
}

/** Thrown inside this module only, and turned into {@link OUTSIDE} before anything leaves it. */
class LeadsOutside extends Error {}

function fdPath(fd: number): string {
  return `/proc/self/fd/${fd}`;
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // closing a folder descriptor cannot lose data: nothing to report
  }
}

/** The text of /proc/self/limits (Linux, where folders are held), or undefined where it cannot be read. */
function processLimits(): string | undefined {
  try {
    return readFileSync("/proc/self/limits", "utf8");
  } catch {
    return undefined;
  }
}
