import { closeSync, constants } from "node:fs";
import { lstatSync, openSync, readdirSync, rm, rmdirSync, unlinkSync } from "../core/named-fs.js";
import { yieldIfLong } from "../core/time-slices.js";
import { HeldWorkspace } from "./held-workspace.js";

/**
 * Removes the entry `where` (a name {@link HeldWorkspace.at} gave) and, when it is a folder, everything below
 * it, never through a link: a link is removed itself, and each folder is opened without following and emptied
 * through its descriptor, so a folder swapped for a link outside mid-way cannot lead the removal out
 * (docs/ARCHITECTURE.md, "Confinement"). Nothing there is not an error.
 * Each call is synchronous and the event loop gets a turn between entries once a slice has run long: a thread-pool
 * round trip for each lstat and unlink made a folder of 50 files cost ~15 ms (docs/ARCHITECTURE.md, "Batched
 * file work").
 */
export async function removeEntry(where: string, attempts = 0): Promise<void> {
  // Something refilling or swapping the folder each time it is emptied: give up after a few rounds.
  if (attempts > 8) throw Object.assign(new Error(`${where} keeps changing while being removed`), { code: "EBUSY" });
  if (!HeldWorkspace.holdsFolders) return rm(where, { recursive: true, force: true }); // the path was checked
  let info;
  try {
    info = lstatSync(where);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if (!info.isDirectory()) return unlinkIfThere(where, attempts);
  let fd: number;
  try {
    fd = openSync(where, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return;
    // Swapped for a link or a file meanwhile: look again.
    if (code === "ELOOP" || code === "ENOTDIR") return removeEntry(where, attempts + 1);
    throw error;
  }
  try {
    const dir = `/proc/self/fd/${fd}`;
    for (const name of readdirSync(dir)) {
      await removeEntry(`${dir}/${name}`);
      await yieldIfLong();
    }
  } finally {
    closeSync(fd);
  }
  try {
    rmdirSync(where);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return;
    // Swapped or refilled meanwhile: look again.
    if (code === "ENOTDIR" || code === "ENOTEMPTY") return removeEntry(where, attempts + 1);
    throw error;
  }
}

async function unlinkIfThere(where: string, attempts: number): Promise<void> {
  try {
    unlinkSync(where);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return;
    if (code === "EISDIR" || code === "EPERM") return removeEntry(where, attempts + 1); // became a folder meanwhile
    throw error;
  }
}
