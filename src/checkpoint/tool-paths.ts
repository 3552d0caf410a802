// named-fs: the path a tool names and a link's target may hold bytes that are not UTF-8, which plain node:fs would
// turn into U+FFFD (docs/ARCHITECTURE.md, "Names and depths").
import { lstat, readlink, realpath } from "../core/named-fs.js";
import { dirname, relative, resolve } from "node:path";
import { confine, isInside, placeLexically } from "./confine.js";

/** A path a tool call named that it must not be run with, and why (words the model that made the call reads). */
export interface RefusedToolPath {
  path: string;
  why: string;
}

// A chain of links longer than this is refused as the kernel would (ELOOP after 40).
const MAX_LINK_HOPS = 40;

/**
 * The paths of one tool call that lead outside the workspace or name no file: `../x`, an absolute path
 * elsewhere, a parent folder that is a link leading out, the named entry itself a link whose target (followed
 * to its end, dangling or not) lies outside, or `""`, which would snapshot the whole workspace. A capture records
 * such a path `skipped` and cannot rewind what the tool does there, and a tool that writes through a link out
 * writes outside; so the tool wrapper refuses the call before it runs. This is a check before the call, not the
 * confinement of the capture itself (which holds folders open against races: docs/ARCHITECTURE.md,
 * "Confinement"); a link swapped in by code racing the call is still never followed by the capture.
 */
export async function refusedToolPaths(
  realWorkspace: string,
  givenWorkspace: string,
  paths: readonly string[],
): Promise<RefusedToolPath[]> {
  const refused: RefusedToolPath[] = [];
  for (const path of paths) {
    const why = await whyRefused(realWorkspace, givenWorkspace, path);
    if (why !== undefined) refused.push({ path, why });
  }
  return refused;
}

async function whyRefused(realWorkspace: string, givenWorkspace: string, path: string): Promise<string | undefined> {
  if (path.trim() === "") return 'names no file: it would snapshot the whole workspace (name "." to mean that)';
  if (!placeLexically(realWorkspace, path, givenWorkspace).inside) return "leads outside the workspace";
  const placed = await confine(realWorkspace, path, givenWorkspace);
  if (!placed.inside) return "goes through a symbolic link that leads outside the workspace (or one that dangles)";
  let current = placed.absolute;
  for (let hop = 0; hop < MAX_LINK_HOPS; hop++) {
    let target: string;
    try {
      if (!(await lstat(current)).isSymbolicLink()) return undefined;
      target = resolve(await realpath(dirname(current)), await readlink(current));
    } catch {
      return undefined; // nothing there (yet): the tool creates it where confine placed it, inside
    }
    if (!isInside(realWorkspace, target)) return "is a symbolic link that leads outside the workspace";
    const next = await confine(realWorkspace, relative(realWorkspace, target));
    if (!next.inside) return "is a symbolic link that leads outside the workspace";
    current = next.absolute;
  }
  return "is a chain of symbolic links too long to follow";
}

/**
 * The path inside the workspace that `path`, a link inside it, leads to at the end of its chain, when that is not
 * `path` itself: a tool handed a link writes through it, so the capture takes the target's before-state too (else
 * a rewind puts the link back and leaves the bytes the tool wrote in its target). Undefined for anything else.
 */
export async function linkTargetInside(
  realWorkspace: string,
  givenWorkspace: string,
  path: string,
): Promise<string | undefined> {
  const placed = await placedInside(realWorkspace, givenWorkspace, path);
  if (placed === undefined) return undefined;
  let current = placed.absolute;
  for (let hop = 0; hop < MAX_LINK_HOPS; hop++) {
    let target: string;
    try {
      if (!(await lstat(current)).isSymbolicLink())
        return current === placed.absolute ? undefined : relative(realWorkspace, current);
      target = resolve(await realpath(dirname(current)), await readlink(current));
    } catch {
      return current === placed.absolute ? undefined : relative(realWorkspace, current); // dangling: made there
    }
    if (!isInside(realWorkspace, target) || target === realWorkspace) return undefined;
    const next = await confine(realWorkspace, relative(realWorkspace, target));
    if (!next.inside) return undefined;
    current = next.absolute;
  }
  return undefined;
}

/**
 * Where `path` lands when a folder above it is a link inside the workspace: the same path with the links above it
 * followed (the deepest folder above it that exists, resolved), workspace-relative, when that is not `path` and
 * stays inside. A tool handed `d/e/f.txt` with `d` a link to `a` writes `a/e/f.txt` and makes `a/e`: the capture
 * takes their before-state too, so the tape knows what it made there (else a rewind takes `a/e` for a folder made
 * by someone else: docs/ARCHITECTURE.md, "Conflicts"). Undefined for anything else.
 */
export async function pathBelowLinkInside(
  realWorkspace: string,
  givenWorkspace: string,
  path: string,
): Promise<string | undefined> {
  const placed = await placedInside(realWorkspace, givenWorkspace, path);
  if (placed === undefined || placed.path === "") return undefined;
  const parts = placed.path.split("/");
  for (let depth = parts.length - 1; depth > 0; depth--) {
    let real: string;
    try {
      real = await realpath(resolve(realWorkspace, ...parts.slice(0, depth)));
    } catch {
      continue; // not there (yet): a folder above it decides
    }
    const landed = resolve(real, ...parts.slice(depth));
    if (!isInside(realWorkspace, landed)) return undefined;
    const inside = relative(realWorkspace, landed).split("\\").join("/");
    return inside === placed.path ? undefined : inside;
  }
  return undefined;
}

/** `path` placed inside the workspace (confine.ts), or undefined when it is blank or leads outside. */
async function placedInside(realWorkspace: string, givenWorkspace: string, path: string) {
  if (path.trim() === "") return undefined;
  const placed = await confine(realWorkspace, path, givenWorkspace);
  return placed.inside ? placed : undefined;
}
