import type { Stats } from "node:fs";

// What a stat said of a file when its bytes were read and hashed (a rewind's plan reads every path it changes):
// while a stat still says the same, the bytes are those hashed, and the rewind's last look before writing the
// path (src/rewind/still-as-planned.ts) need not read and hash them again (docs/ARCHITECTURE.md, "Batched file
// work"). Any write to a file sets its ctime to the time of the write; a rename or a new file gives another inode.

/**
 * A file changed this recently before it was looked at is hashed again at the last look: a second write within
 * the same step of the file system's clock (a tick of a few milliseconds on Linux) could leave its ctime as it
 * was. Well past any local file system's step, and not so long that a rewind soon after the edits reads them all
 * twice.
 */
export const RECENT_CHANGE_MS = 1000;

/** The stat of a file whose bytes hashed to `blob`. */
export interface FileStamp {
  blob: string;
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/**
 * The stamp of a file fstat-ed at `lookedAt` (Date.now() just before the fstat) and then read and hashed to
 * `blob`; none when it changed within {@link RECENT_CHANGE_MS} of that look (or its ctime lies ahead of this
 * process's clock).
 */
export function stampOf(info: Stats, blob: string, lookedAt: number): FileStamp | undefined {
  if (info.ctimeMs > lookedAt - RECENT_CHANGE_MS) return undefined;
  const { dev, ino, size, mtimeMs, ctimeMs } = info;
  return { blob, dev, ino, size, mtimeMs, ctimeMs };
}

/** True when `info` is the stat `stamp` recorded for a file hashed to `blob`: the same inode, never written since. */
export function stillStamped(info: Stats, stamp: FileStamp | undefined, blob: string): boolean {
  return (
    stamp !== undefined &&
    stamp.blob === blob &&
    info.dev === stamp.dev &&
    info.ino === stamp.ino &&
    info.size === stamp.size &&
    info.mtimeMs === stamp.mtimeMs &&
    info.ctimeMs === stamp.ctimeMs
  );
}
