import { constants } from "node:fs";
import { lstat, mkdir, open, readlink, symlink, type FileHandle } from "node:fs/promises";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { fsyncDir } from "../core/atomic-file.js";
import { syncFilesystem } from "../core/sync-filesystem.js";
import { confine } from "../checkpoint/confine.js";
import { HeldWorkspace, OUTSIDE } from "../checkpoint/held-workspace.js";

/** What one entry of the target is: the kind made there. */
export type MadeKind = "file" | "symlink" | "directory";

export interface CopiedEntries {
  /** Entries made in the target, by workspace-relative path. */
  made: Map<string, MadeKind>;
  /** Paths not copied: outside the source, unreadable, or not a file, folder or link. */
  skipped: { path: string; reason: string }[];
  /**
   * Folders whose mode lacks the owner's rwx: made with it (so what goes inside can be written) and set
   * to their own mode by {@link setFolderModes} once everything inside is.
   */
  folderModes: Map<string, number>;
}

// Bytes read and written at once per file: with `concurrency` files in flight, what a copy holds in memory.
const CHUNK = 256 * 1024;

/**
 * Copies each of `paths` from the source workspace to the target as it is now: a file's bytes and mode, a
 * link as a link (its target as written, never followed), a folder with its mode but not what is below it
 * (the paths below it that are wanted are in `paths`). The folders above a path are made too, with their
 * modes. A path missing in the source is left out. Every entry is reached through its folder held open on
 * both sides (docs/ARCHITECTURE.md, "Confinement"): nothing outside either workspace is read or written.
 * `beforeMaking` hears each top-level name before anything is made under it (a failed fork removes them).
 */
export async function copyEntries(
  fromReal: string,
  toReal: string,
  paths: Iterable<string>,
  options: { concurrency: number; beforeMaking: (topName: string) => void; into?: CopiedEntries },
): Promise<CopiedEntries> {
  const result: CopiedEntries = options.into ?? { made: new Map(), skipped: [], folderModes: new Map() };
  const from = await HeldWorkspace.open(fromReal);
  const to = await HeldWorkspace.open(toReal);
  try {
    const wanted = new Set<string>();
    for (const given of paths) {
      const place = await confine(fromReal, given);
      if (!place.inside) {
        result.skipped.push({ path: place.path, reason: "outside_workspace" });
        continue;
      }
      if (place.path === ".") continue; // the target folder itself exists already
      for (let p = place.path; p !== "" && !wanted.has(p); p = p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "")
        wanted.add(p);
    }
    const depth = (p: string) => p.split("/").length;
    const ordered = [...wanted].filter((p) => !result.made.has(p)).sort((a, b) => depth(a) - depth(b));
    // Folders first, one depth at a time (a parent before its children), then files and links in parallel.
    const later: { path: string; kind: "file" | "symlink" }[] = [];
    // A path below a link is the link's business: the link is copied as a link, never gone through.
    const links = new Set<string>();
    const belowLink = (path: string) => {
      for (let slash = path.indexOf("/"); slash !== -1; slash = path.indexOf("/", slash + 1))
        if (links.has(path.slice(0, slash)) || result.made.get(path.slice(0, slash)) === "symlink") return true;
      return false;
    };
    let level: string[] = [];
    const flush = async () => {
      await forEachLimited(level, options.concurrency, async (path) => {
        if (belowLink(path)) return;
        const kind = await copyOne(from, to, path, result, options.beforeMaking, true);
        if (kind === "symlink") links.add(path);
        if (kind === "file" || kind === "symlink") later.push({ path, kind });
      });
      level = [];
    };
    for (const path of ordered) {
      if (level.length > 0 && depth(level[0]!) !== depth(path)) await flush();
      level.push(path);
    }
    await flush();
    await forEachLimited(later, options.concurrency, async ({ path }) => {
      await copyOne(from, to, path, result, options.beforeMaking, false);
    });
    return result;
  } finally {
    await Promise.all([from.close(), to.close()]);
  }
}

/**
 * Looks at one source entry and copies it. In the folder pass (`foldersOnly`) only folders are made; a
 * file or link is returned for the second pass.
 */
async function copyOne(
  from: HeldWorkspace,
  to: HeldWorkspace,
  path: string,
  result: CopiedEntries,
  beforeMaking: (topName: string) => void,
  foldersOnly: boolean,
): Promise<MadeKind | "other" | undefined> {
  let info;
  try {
    info = await from.at(path, (where) => lstat(where));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined; // not there now: nothing to copy
    result.skipped.push({ path, reason: `unreadable (${code ?? String(error)})` });
    return undefined;
  }
  if (info === OUTSIDE) {
    result.skipped.push({ path, reason: "outside_workspace" });
    return undefined;
  }
  const kind = info.isDirectory() ? "directory" : info.isFile() ? "file" : info.isSymbolicLink() ? "symlink" : "other";
  if (kind === "other") {
    result.skipped.push({ path, reason: "not_a_regular_file" });
    return kind;
  }
  if (foldersOnly && kind !== "directory") return kind;
  beforeMaking(path.split("/")[0]!);
  const mode = info.mode & 0o7777;
  if (kind === "directory") {
    await made(to, path, async (where) => {
      await mkdir(where);
      await chmodFolder(where, mode | 0o700);
    });
    if ((mode & 0o700) !== 0o700) result.folderModes.set(path, mode);
  } else if (kind === "symlink") {
    let target;
    try {
      target = await from.at(path, (where) => readlink(where));
    } catch (error) {
      result.skipped.push({ path, reason: `unreadable (${(error as NodeJS.ErrnoException).code ?? String(error)})` });
      return undefined;
    }
    if (target === OUTSIDE) {
      result.skipped.push({ path, reason: "outside_workspace" });
      return undefined;
    }
    await made(to, path, (where) => symlink(target, where));
  } else {
    const copied = await copyFile(from, to, path);
    if (copied !== "copied") {
      result.skipped.push({ path, reason: copied });
      return undefined;
    }
  }
  result.made.set(path, kind);
  return kind;
}

/** Runs `make` on the target's name for `path`, its folders made as needed; a path leading outside is an error. */
async function made(to: HeldWorkspace, path: string, make: (where: string) => Promise<void>): Promise<void> {
  const done = await to.at(path, make, { create: true });
  // The target is a new folder nothing else writes to: a way out there is an attack on this very call.
  if (done === OUTSIDE) throw Object.assign(new Error(`${path} leads outside the new workspace`), { code: "EXDEV" });
}

/**
 * Copies a regular file's bytes through a descriptor opened without following links (what is copied is what
 * was checked), into a new file opened O_EXCL | O_NOFOLLOW, then sets its mode. Returns why it was not copied
 * when the source cannot be read; a failure to write throws.
 */
async function copyFile(from: HeldWorkspace, to: HeldWorkspace, path: string): Promise<string> {
  let source: FileHandle | typeof OUTSIDE;
  try {
    source = await from.at(path, (where) =>
      open(where, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK),
    );
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ELOOP" ? "unreadable (became a symlink while being copied)" : `unreadable (${code})`;
  }
  if (source === OUTSIDE) return "outside_workspace";
  try {
    const info = await source.stat();
    if (!info.isFile()) return "not_a_regular_file";
    const src = source;
    await made(to, path, async (where) => {
      const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
      const target = await open(where, flags, 0o600);
      try {
        const buffer = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(1, info.size)));
        for (let at = 0; ; ) {
          const { bytesRead } = await src.read(buffer, 0, buffer.length, at);
          if (bytesRead === 0) break;
          await target.write(buffer, 0, bytesRead, at);
          at += bytesRead;
        }
        await target.chmod(info.mode & 0o7777); // after writing, and explicitly: open()'s mode is cut by the umask
      } finally {
        await target.close();
      }
    });
    return "copied";
  } finally {
    await source.close();
  }
}

/** Sets a folder's mode through a descriptor opened without following a link in its place. */
async function chmodFolder(where: string, mode: number): Promise<void> {
  const fh = await open(where, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    await fh.chmod(mode);
  } finally {
    await fh.close();
  }
}

/** Gives the folders of {@link CopiedEntries.folderModes} their own modes, deepest first (after their contents). */
export async function setFolderModes(toReal: string, modes: ReadonlyMap<string, number>): Promise<void> {
  if (modes.size === 0) return;
  const to = await HeldWorkspace.open(toReal);
  try {
    const deepestFirst = [...modes].sort(([a], [b]) => b.split("/").length - a.split("/").length);
    for (const [path, mode] of deepestFirst) await made(to, path, (where) => chmodFolder(where, mode));
  } finally {
    await to.close();
  }
}

/**
 * Makes what was written in the target durable: one syncfs of its filesystem, or where there is none an
 * fsync of each file made and of each folder holding an entry made.
 */
export async function makeDurable(toReal: string, made: ReadonlyMap<string, MadeKind>): Promise<void> {
  if (await syncFilesystem(toReal)) return;
  const to = await HeldWorkspace.open(toReal);
  try {
    const files = [...made].filter(([, kind]) => kind === "file").map(([path]) => path);
    await forEachLimited(files, 8, async (path) => {
      await to.at(path, async (where) => {
        const fh = await open(where, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
        try {
          await fh.sync();
        } finally {
          await fh.close();
        }
      });
    });
    const folders = new Set([...made.keys()].map((p) => (p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "")));
    for (const folder of folders) await to.folder(folder, fsyncDir);
  } finally {
    await to.close();
  }
}
