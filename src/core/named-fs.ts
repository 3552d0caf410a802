import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import { nameFromBytes, osPath } from "./byte-names.js";

// The file calls of the workspace code (capture, index, plan, rewind, undo), taking and giving paths in the
// library's form (byte-names.ts): a name that is not UTF-8 reaches the OS as its bytes, and a folder is listed
// as bytes (`encoding: "buffer"`), so no name is turned into another on the way (docs/ARCHITECTURE.md, "On
// disk"). Only what the workspace code uses is here; each is the node:fs call of the same name.

type Mode = fs.Mode | undefined;

export const lstat = (path: string) => fsp.lstat(osPath(path));
export const open = (path: string, flags?: number | string, mode?: Mode) => fsp.open(osPath(path), flags, mode);
export const rename = (from: string, to: string) => fsp.rename(osPath(from), osPath(to));
export const unlink = (path: string) => fsp.unlink(osPath(path));
export const rmdir = (path: string) => fsp.rmdir(osPath(path));
export const rm = (path: string, options?: fs.RmOptions) => fsp.rm(osPath(path), options);
export const mkdir = (path: string, options?: fs.MakeDirectoryOptions) => fsp.mkdir(osPath(path), options);
export const symlink = (target: string, path: string) => fsp.symlink(osPath(target), osPath(path));
export const copyFile = (from: string, to: string, mode?: number) => fsp.copyFile(osPath(from), osPath(to), mode);
export const readFile = (path: string) => fsp.readFile(osPath(path));

export async function readlink(path: string): Promise<string> {
  return nameFromBytes(await fsp.readlink(osPath(path), { encoding: "buffer" }));
}

export async function realpath(path: string): Promise<string> {
  return nameFromBytes(await fsp.realpath(osPath(path), { encoding: "buffer" }));
}

/** The names in a folder, each exactly (see the top of this file). */
export async function readdir(path: string): Promise<string[]> {
  return (await fsp.readdir(osPath(path), { encoding: "buffer" })).map(nameFromBytes);
}

/** The entries of a folder with their types, each name exactly. */
export async function readdirTyped(path: string): Promise<{ name: string; isDirectory(): boolean }[]> {
  const entries = await fsp.readdir(osPath(path), { encoding: "buffer", withFileTypes: true });
  return entries.map((entry) => ({ name: nameFromBytes(entry.name), isDirectory: () => entry.isDirectory() }));
}

export function lstatSync(path: string): fs.Stats;
export function lstatSync(path: string, options: { bigint: true; throwIfNoEntry: false }): fs.BigIntStats | undefined;
export function lstatSync(path: string, options?: fs.StatSyncOptions) {
  return fs.lstatSync(osPath(path), options);
}
export const openSync = (path: string, flags: number, mode?: Mode) => fs.openSync(osPath(path), flags, mode);
export const mkdirSync = (path: string) => fs.mkdirSync(osPath(path));
export const symlinkSync = (target: string, path: string) => fs.symlinkSync(osPath(target), osPath(path));
export const copyFileSync = (from: string, to: string, mode?: number) =>
  fs.copyFileSync(osPath(from), osPath(to), mode);
export const readlinkSync = (path: string) => nameFromBytes(fs.readlinkSync(osPath(path), { encoding: "buffer" }));

/** The names in a folder, each exactly (see the top of this file). */
export function readdirSync(path: string): string[] {
  return fs.readdirSync(osPath(path), { encoding: "buffer" }).map(nameFromBytes);
}
