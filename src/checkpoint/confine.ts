import type { Stats } from "node:fs";
import { lstat, lstatSync, realpath, realpathSync } from "../core/named-fs.js";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { InvalidArgumentError } from "../core/errors.js";

/** A path the caller named, placed inside the workspace or found to lead outside it. */
export type ConfinedPath =
  | { inside: true /** workspace-relative, `/`-separated */; path: string; absolute: string }
  | { inside: false; path: string };

/**
 * The real path of a workspace (symlinks resolved), which every confinement check is made
 * against. INVALID_ARGUMENT, naming it, when it does not exist or cannot be resolved.
 */
export async function realWorkspaceOf(workspace: string): Promise<string> {
  try {
    // One call, at once: through the thread pool it was a round trip (docs/ARCHITECTURE.md, "Batched file work").
    return realpathSync(resolve(workspace));
  } catch (error) {
    throw new InvalidArgumentError(`Workspace "${workspace}" cannot be resolved: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** True when `candidate` is `root` or below it (both absolute, normalised). */
export function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  return candidate.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** Workspace-relative path with `/` separators on every platform; "." for the workspace itself. */
export function toPortable(rel: string): string {
  if (rel === "") return ".";
  return sep === "/" ? rel : rel.split(sep).join("/");
}

/** What lstat said of one parent folder: its stats, or the error code. */
type ParentLook = { info: Stats } | { code: string | undefined };

/**
 * The parent folders one operation has already looked at, by absolute path, shared by its calls to
 * {@link confine}: 1000 files in 200 folders four levels deep cost some 300 lstats instead of 5000. Only for
 * an operation that reaches every entry through {@link HeldWorkspace} (which checks the folder it opens
 * at the moment of use); a parent swapped for a link after its first look is caught there, not here.
 */
export type ParentLooks = Map<string, Promise<ParentLook>>;

/**
 * Places `path` inside the workspace, or says it leads outside: `../`, absolute paths elsewhere,
 * and parents that are symlinks to folders outside (or dangling links, which cannot be proved
 * inside) are outside. The last component is never followed: a symlink there is the thing to
 * record, not a way through. `realWorkspace` must be the workspace's real path; `givenWorkspace`
 * is the spelling the caller used, so absolute paths through it are accepted too.
 */
export async function confine(
  realWorkspace: string,
  path: string,
  givenWorkspace: string = realWorkspace,
  looks?: ParentLooks,
): Promise<ConfinedPath> {
  const lexical = lexicalRelative(realWorkspace, givenWorkspace, path);
  if (lexical === undefined) return { inside: false, path: toPortable(path) };
  const portable = toPortable(lexical);
  if (!(await parentsStayInside(realWorkspace, lexical, looks))) return { inside: false, path: portable };
  return { inside: true, path: portable, absolute: inWorkspace(realWorkspace, lexical) };
}

/**
 * {@link confine} without looking at the disk: `../`, absolute paths elsewhere and NUL are outside; the
 * parents are not checked. Only for a caller that then reaches the path through a {@link HeldWorkspace}
 * holding folders (it checks the real folder it opens) and asks {@link confine} when that fails (a dangling
 * link among the parents reads as missing there, and must be outside).
 */
export function placeLexically(realWorkspace: string, path: string, givenWorkspace: string): ConfinedPath {
  const lexical = lexicalRelative(realWorkspace, givenWorkspace, path);
  if (lexical === undefined) return { inside: false, path: toPortable(path) };
  return {
    inside: true,
    path: toPortable(lexical),
    absolute: inWorkspace(realWorkspace, lexical),
  };
}

/**
 * The absolute path of `rel` in the workspace. `rel` must be normalised and relative, as {@link lexicalRelative}
 * gives it: then joining is putting a separator between, and `path.join`'s normalising (several strings a call)
 * was a tenth of what a 1,000-file rewind allocated (docs/ARCHITECTURE.md, "Batched file work").
 */
export function inWorkspace(realWorkspace: string, rel: string): string {
  if (rel === "") return realWorkspace;
  if (sep !== "/") return join(realWorkspace, rel);
  return realWorkspace.endsWith(sep) ? realWorkspace + rel : realWorkspace + sep + rel;
}

/**
 * True when `path` is already what {@link lexicalRelative} would make of it: relative, its names separated by
 * one `/` each, none of them empty, `.` or `..`, no NUL. The common case (a tool's path, a recorded path), which
 * then needs no resolving. POSIX only: on Windows `\` and drive letters make paths that look plain anything but.
 */
export function isPlainRelative(path: string): boolean {
  if (sep !== "/" || path === "" || path.includes("\0")) return false;
  let start = 0;
  for (;;) {
    const slash = path.indexOf("/", start);
    const end = slash === -1 ? path.length : slash;
    const length = end - start;
    if (length === 0) return false;
    if (path.charCodeAt(start) === 46 /* . */ && (length === 1 || (length === 2 && path.charCodeAt(start + 1) === 46)))
      return false;
    if (slash === -1) return true;
    start = slash + 1;
  }
}

function lexicalRelative(realWorkspace: string, givenWorkspace: string, path: string): string | undefined {
  if (isPlainRelative(path)) return path;
  if (path.includes("\0")) return undefined;
  const bases =
    isAbsolute(path) && givenWorkspace !== realWorkspace ? [realWorkspace, resolve(givenWorkspace)] : [realWorkspace];
  for (const base of bases) {
    const rel = relative(base, resolve(base, path));
    if (rel === "") return "";
    if (!isAbsolute(rel) && rel !== ".." && !rel.startsWith(".." + sep)) return rel;
  }
  return undefined;
}

/**
 * One parent's lstat, synchronous: the call takes a few µs, a hop through the thread pool and back many times
 * that, and a 100-file rewind's plan spent half its 60 ms waiting on those hops (docs/ARCHITECTURE.md, "Batched
 * file work"). A promise still, so the looks an operation shares stay one map whatever made them.
 */
function look(absolute: string): Promise<ParentLook> {
  try {
    return Promise.resolve({ info: lstatSync(absolute) });
  } catch (error) {
    return Promise.resolve({ code: (error as NodeJS.ErrnoException).code });
  }
}

/** What lstat says of `absolute` (its stats, or the error's code), looked at once per `looks`. */
export function lookOnce(looks: ParentLooks, absolute: string): Promise<ParentLook> {
  let found = looks.get(absolute);
  if (!found) looks.set(absolute, (found = look(absolute)));
  return found;
}

async function parentsStayInside(realWorkspace: string, rel: string, looks?: ParentLooks): Promise<boolean> {
  if (rel === "") return true;
  // The common case is a chain of plain folders: stat them all (each looked at once per operation), and walk
  // one by one, resolving links, only when a link shows up.
  const prefixes: string[] = [];
  for (let slash = rel.indexOf(sep); slash > 0; slash = rel.indexOf(sep, slash + 1))
    prefixes.push(inWorkspace(realWorkspace, rel.slice(0, slash)));
  const found = await Promise.all(prefixes.map((p) => (looks ? lookOnce(looks, p) : look(p))));
  for (const entry of found) {
    if ("code" in entry) return isNothingThere(entry.code);
    if (entry.info.isSymbolicLink()) return walkParents(realWorkspace, rel.split(sep).slice(0, -1));
    // A file used as a folder: the path cannot exist, and reading it fails honestly.
    if (!entry.info.isDirectory()) return true;
  }
  return true;
}

/**
 * Nothing there (or nothing that can be named): nothing to lead anywhere. Reading the path then fails
 * with the same code, recorded as what it is rather than as outside.
 */
function isNothingThere(code: string | undefined): boolean {
  return code === "ENOENT" || code === "ENOTDIR" || code === "ENAMETOOLONG";
}

async function walkParents(realWorkspace: string, parents: readonly string[]): Promise<boolean> {
  let current = realWorkspace;
  for (const part of parents) {
    current = join(current, part);
    let info;
    try {
      info = await lstat(current);
    } catch (error) {
      return isNothingThere((error as NodeJS.ErrnoException).code);
    }
    if (info.isSymbolicLink()) {
      try {
        current = await realpath(current);
      } catch {
        return false; // a dangling link could be pointed anywhere later
      }
      if (!isInside(realWorkspace, current)) return false;
    } else if (!info.isDirectory()) {
      return true; // a file used as a folder: the path cannot exist, and reading it fails honestly
    }
  }
  return true;
}
