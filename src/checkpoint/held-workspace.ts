import { constants, existsSync, type Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { lstat, mkdir, open, readdir, readlink } from "../core/named-fs.js";
import { join } from "node:path";
import { confine, isInside } from "./confine.js";

/** What {@link HeldWorkspace.at} returns when the folder holding a path leads outside the workspace. */
export const OUTSIDE: unique symbol = Symbol("outside the workspace");

// Linux names the entries of the folder behind an open descriptor as /proc/self/fd/N/name, resolved in exactly
// that folder whatever its path has become since. Elsewhere there is no such name for a descriptor's folder.
const HOLDS_FOLDERS = process.platform === "linux" && existsSync("/proc/self/fd");

// Past this many distinct folders in one operation, a folder is opened for each use instead of kept open.
const MAX_KEPT_FOLDERS = 256;

interface Held {
  handle: FileHandle;
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
 */
export class HeldWorkspace {
  private readonly folders = new Map<string, Promise<Held>>();

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
    let kept = this.folders.get(rel);
    if (!kept) {
      const keep = this.folders.size < MAX_KEPT_FOLDERS;
      const opening = this.openFolder(rel, options.create ?? false);
      kept = opening.then((handle) => ({ handle, uses: 0, forgotten: !keep }));
      if (keep) {
        this.folders.set(rel, kept);
        // A failure is not kept: the folder may exist by the next call.
        kept.catch(() => this.folders.get(rel) === kept && this.folders.delete(rel));
      }
    }
    let held: Held;
    try {
      held = await kept;
    } catch (error) {
      if (error instanceof LeadsOutside) return OUTSIDE;
      // Another call without `create` found it missing first: open it afresh, making what is missing.
      if (!options.create || (error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      try {
        held = { handle: await this.openFolder(rel, true), uses: 0, forgotten: true };
      } catch (again) {
        if (again instanceof LeadsOutside) return OUTSIDE;
        throw again;
      }
    }
    held.uses++;
    try {
      return await act(descriptorPath(held.handle));
    } finally {
      if (--held.uses === 0 && held.forgotten) await held.handle.close().catch(() => undefined);
    }
  }

  /**
   * The entries of the folder `rel`, each with its lstat (or the error code lstat gave), the folder itself
   * opened without following a link in its place: a folder swapped for a link since it was looked at fails
   * (ELOOP) instead of listing wherever the link leads. OUTSIDE when its parent leads outside.
   */
  async list(rel: string): Promise<{ name: string; info?: Stats; error?: string }[] | typeof OUTSIDE> {
    return this.at(rel, async (where) => {
      if (!this.holds) return statEntries(where, await readdir(where));
      const handle = await open(where, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      try {
        const dir = descriptorPath(handle);
        return await statEntries(dir, await readdir(dir));
      } finally {
        await handle.close();
      }
    });
  }

  /** Drops the kept descriptors of `rel` and every folder below it: it was removed or replaced. */
  forget(rel: string): void {
    for (const [key, kept] of this.folders) {
      if (key !== rel && !key.startsWith(`${rel}/`)) continue;
      this.folders.delete(key);
      kept
        .then(async (held) => {
          held.forgotten = true;
          if (held.uses === 0) await held.handle.close();
        })
        .catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    const kept = [...this.folders.values()];
    this.folders.clear();
    await Promise.all(kept.map((k) => k.then((held) => held.handle.close()).catch(() => undefined)));
  }

  /** Opens `rel` (following links, as a parent is followed), then checks where the descriptor really is. */
  private async openFolder(rel: string, create: boolean): Promise<FileHandle> {
    let handle: FileHandle;
    try {
      handle = await open(`${this.realWorkspace}/${rel}`, constants.O_RDONLY | constants.O_DIRECTORY);
    } catch (error) {
      if (!create || (error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      return this.makeFolder(rel);
    }
    let real: string;
    try {
      real = await readlink(descriptorPath(handle));
    } catch (error) {
      await handle.close();
      if ((error as NodeJS.ErrnoException).code === "ENAMETOOLONG") return this.openInParent(rel);
      throw error;
    }
    if (isInside(this.realWorkspace, real)) return handle;
    await handle.close();
    throw new LeadsOutside();
  }

  /**
   * A folder whose real path /proc cannot name (past PATH_MAX: readlink says ENAMETOOLONG) is checked another
   * way: it is opened without following a link inside its parent, held and checked itself, so it lies inside.
   */
  private async openInParent(rel: string): Promise<FileHandle> {
    const slash = rel.lastIndexOf("/");
    const flags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
    const opened = await this.folder(slash === -1 ? "" : rel.slice(0, slash), (dir) =>
      open(`${dir}/${rel.slice(slash + 1)}`, flags),
    );
    if (opened === OUTSIDE) throw new LeadsOutside();
    return opened;
  }

  /** Makes the missing folders of `rel` one at a time, each inside the folder before it as checked. */
  private async makeFolder(rel: string): Promise<FileHandle> {
    const parts = rel.split("/");
    let parent = this.realWorkspace;
    let made: FileHandle | undefined;
    try {
      for (let i = 0; i < parts.length; i++) {
        await mkdir(`${parent}/${parts[i]}`).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== "EEXIST") throw error;
        });
        const next = await this.openFolder(parts.slice(0, i + 1).join("/"), false);
        if (made) await made.close();
        made = next;
        parent = descriptorPath(next);
      }
    } catch (error) {
      if (made) await made.close();
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

/** Thrown inside this module only, and turned into {@link OUTSIDE} before anything leaves it. */
class LeadsOutside extends Error {}

function descriptorPath(handle: FileHandle): string {
  return `/proc/self/fd/${handle.fd}`;
}
