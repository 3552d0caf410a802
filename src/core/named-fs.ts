import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import { bytesOfName, nameFromBytes, osPath } from "./byte-names.js";

// The file calls of the workspace code (capture, index, plan, rewind, undo), taking and giving paths in the
// library's form (byte-names.ts): a name that is not UTF-8 reaches the OS as its bytes, and a folder is listed
// as bytes (`encoding: "buffer"`), so no name is turned into another on the way; and a path of any length is
// reached (see `reach`). Only what the workspace code uses is here; each is the node:fs call of the same name
// (docs/ARCHITECTURE.md, "On disk", names and depths).

type Mode = fs.Mode | undefined;
type OsPath = string | Buffer;

// A path of PATH_MAX (4096 bytes) or more cannot be handed to the OS whole (ENAMETOOLONG). Linux names the
// entries of an open folder as /proc/self/fd/N/name, so such a path is reached in steps: its longest head under
// REACH_BYTES is opened as a folder, then the next part below /proc/self/fd/N, and so on; the last part, the
// entry itself, is left to the call (a link there is not followed by lstat, O_NOFOLLOW, rename or unlink). The
// folders above are followed as the OS follows a path's folders: confinement checks them as it does for short
// paths (docs/ARCHITECTURE.md, "Confinement").
const REACH_BYTES = 3800;
const SLASH = 0x2f;
const FOLDER_FLAGS = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY;

/** A name the OS takes for `path` (any length), and what to close once the call that uses it is done. */
function reach(path: string): { os: OsPath; done: () => void } {
  if (path.length * 3 < REACH_BYTES) return { os: osPath(path), done: noop }; // at most 3 bytes per code unit
  let rest = bytesOfName(path);
  if (rest.length < REACH_BYTES) return { os: rest, done: noop };
  let head = Buffer.alloc(0);
  let fd = -1;
  try {
    while (head.length + rest.length >= REACH_BYTES) {
      const cut = rest.lastIndexOf(SLASH, REACH_BYTES - head.length - 1);
      if (cut <= 0)
        throw Object.assign(new Error(`a name in ${path} is longer than NAME_MAX`), { code: "ENAMETOOLONG" });
      const next = fs.openSync(Buffer.concat([head, rest.subarray(0, cut)]), FOLDER_FLAGS);
      if (fd !== -1) fs.closeSync(fd);
      fd = next;
      head = Buffer.from(`/proc/self/fd/${fd}/`);
      rest = rest.subarray(cut + 1);
    }
  } catch (error) {
    if (fd !== -1) fs.closeSync(fd);
    throw error;
  }
  const held = fd;
  return { os: Buffer.concat([head, rest]), done: () => held !== -1 && fs.closeSync(held) };
}

function noop(): void {}

/** Runs `call` with an OS name for `path`, then closes what reaching it opened. */
function at<T>(path: string, call: (os: OsPath) => T): T {
  const { os, done } = reach(path);
  try {
    return call(os);
  } finally {
    done();
  }
}

async function atAsync<T>(path: string, call: (os: OsPath) => Promise<T>): Promise<T> {
  const { os, done } = reach(path);
  try {
    return await call(os);
  } finally {
    done();
  }
}

function atBoth<T>(from: string, to: string, call: (a: OsPath, b: OsPath) => Promise<T>): Promise<T> {
  return atAsync(from, (a) => atAsync(to, (b) => call(a, b)));
}

export const lstat = (path: string) => atAsync(path, (os) => fsp.lstat(os));
export const stat = (path: string) => atAsync(path, (os) => fsp.stat(os));
export const open = (path: string, flags?: number | string, mode?: Mode) =>
  atAsync(path, (os) => fsp.open(os, flags, mode));
export const rename = (from: string, to: string) => atBoth(from, to, (a, b) => fsp.rename(a, b));
export const unlink = (path: string) => atAsync(path, (os) => fsp.unlink(os));
export const lchown = (path: string, uid: number, gid: number) => atAsync(path, (os) => fsp.lchown(os, uid, gid));
export const rmdir = (path: string) => atAsync(path, (os) => fsp.rmdir(os));
export const rm = (path: string, options?: fs.RmOptions) => atAsync(path, (os) => fsp.rm(os, options));
export const mkdir = (path: string, options?: fs.MakeDirectoryOptions) => atAsync(path, (os) => fsp.mkdir(os, options));
/** `target` is the link's text, not a path to reach: it is written as its bytes, whatever its length. */
export const symlink = (target: string, path: string) => atAsync(path, (os) => fsp.symlink(osPath(target), os));
export const copyFile = (from: string, to: string, mode?: number) =>
  atBoth(from, to, (a, b) => fsp.copyFile(a, b, mode));
export const readFile = (path: string) => atAsync(path, (os) => fsp.readFile(os));

export async function readlink(path: string): Promise<string> {
  return nameFromBytes(await atAsync(path, (os) => fsp.readlink(os, { encoding: "buffer" })));
}

export async function realpath(path: string): Promise<string> {
  return nameFromBytes(await atAsync(path, (os) => fsp.realpath(os, { encoding: "buffer" })));
}

/** The names in a folder, each exactly (see the top of this file). */
export async function readdir(path: string): Promise<string[]> {
  return (await atAsync(path, (os) => fsp.readdir(os, { encoding: "buffer" }))).map(nameFromBytes);
}

/** The entries of a folder with their types, each name exactly. */
export async function readdirTyped(path: string): Promise<{ name: string; isDirectory(): boolean }[]> {
  const entries = await atAsync(path, (os) => fsp.readdir(os, { encoding: "buffer", withFileTypes: true }));
  return entries.map((entry) => ({ name: nameFromBytes(entry.name), isDirectory: () => entry.isDirectory() }));
}

export function lstatSync(path: string): fs.Stats;
export function lstatSync(path: string, options: { bigint: true; throwIfNoEntry: false }): fs.BigIntStats | undefined;
export function lstatSync(path: string, options: { throwIfNoEntry: false }): fs.Stats | undefined;
export function lstatSync(path: string, options?: fs.StatSyncOptions) {
  return at(path, (os) => fs.lstatSync(os, options));
}
export const openSync = (path: string, flags: number, mode?: Mode) => at(path, (os) => fs.openSync(os, flags, mode));
export const mkdirSync = (path: string) => at(path, (os) => fs.mkdirSync(os));
export const symlinkSync = (target: string, path: string) => at(path, (os) => fs.symlinkSync(osPath(target), os));
export const copyFileSync = (from: string, to: string, mode?: number) =>
  at(from, (a) => at(to, (b) => fs.copyFileSync(a, b, mode)));
export const realpathSync = (path: string) =>
  nameFromBytes(at(path, (os) => fs.realpathSync.native(os, { encoding: "buffer" })));
export const readlinkSync = (path: string) =>
  nameFromBytes(at(path, (os) => fs.readlinkSync(os, { encoding: "buffer" })));

/** The entries of a folder with their types, each name exactly (see the top of this file). */
export function readdirTypedSync(path: string): { name: string; entry: fs.Dirent<Buffer> }[] {
  const entries = at(path, (os) => fs.readdirSync(os, { encoding: "buffer", withFileTypes: true }));
  return entries.map((entry) => ({ name: nameFromBytes(entry.name), entry }));
}

/** The names in a folder, each exactly (see the top of this file). */
export function readdirSync(path: string): string[] {
  return at(path, (os) => fs.readdirSync(os, { encoding: "buffer" })).map(nameFromBytes);
}
export const statSync = (path: string) => at(path, (os) => fs.statSync(os));
export const renameSync = (from: string, to: string) => at(from, (a) => at(to, (b) => fs.renameSync(a, b)));
export const unlinkSync = (path: string) => at(path, (os) => fs.unlinkSync(os));
export const rmdirSync = (path: string) => at(path, (os) => fs.rmdirSync(os));
