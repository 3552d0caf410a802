import { randomBytes } from "node:crypto";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
// A workspace folder's name may hold bytes that are not UTF-8 (docs/ARCHITECTURE.md, "Names and depths").
import { open as openNamed } from "./named-fs.js";

/** fsync a file or a folder, opened by name: its bytes, or a rename or create inside it, survive power loss. */
export async function fsyncPath(path: string): Promise<void> {
  const fh = await openNamed(path, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** fsync a directory so a rename or create inside it survives power loss. */
export const fsyncDir: (dir: string) => Promise<void> = fsyncPath;

/** A temp name beside `file`, so the final rename stays on one filesystem (and is atomic). */
export function tempPathFor(file: string): string {
  return join(dirname(file), `.tmp-${basename(file)}-${randomBytes(6).toString("hex")}`);
}

export interface AtomicWriteOptions {
  /** fsync the data and the folder: the write survives power loss, not only a process crash. @default true */
  durable?: boolean;
  mode?: number;
  /**
   * Makes the temp's bytes durable together with other writes the caller needs durable with it, in one wait:
   * by a syncfs of its filesystem that covers them all, or by running `syncTemp` (the temp's own fsync) at the
   * same time as theirs. Either way the temp is durable when it resolves.
   */
  syncData?: (syncTemp: () => Promise<void>) => Promise<void>;
}

/**
 * Replaces `file` with `data` so a reader (or a crash) sees the old bytes or the new, never a
 * mix: write a temp file, fsync it, rename it over, fsync the folder.
 */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const durable = options.durable ?? true;
  const temp = tempPathFor(file);
  const fh = await open(temp, "wx", options.mode ?? 0o644);
  try {
    try {
      await fh.writeFile(data);
      if (options.mode !== undefined) await fh.chmod(options.mode); // open()'s mode is filtered by the umask
      if (durable) await (options.syncData ? options.syncData(() => fh.sync()) : fh.sync());
    } finally {
      await fh.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  if (durable) await fsyncDir(dirname(file));
}
