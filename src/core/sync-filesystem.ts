import { execFile } from "node:child_process";

/**
 * From this many new files in one batch on, one syncfs of their filesystem costs less than an fsync each
 * (docs/ARCHITECTURE.md, "Rewind intent"): libuv runs 4 fsyncs at once, each a journal commit, while a
 * syncfs is one commit plus writing back what is dirty, and costs a process start.
 */
export const SYNC_FILESYSTEM_FROM = 16;

// Once `sync -f` is found missing or refused (not Linux, a minimal image), nobody asks again.
let unavailable = process.platform !== "linux";

/**
 * Makes everything written on the filesystem holding `folder` durable at once — file data, renames,
 * unlinks, new folders — through syncfs(2) (`sync -f`, coreutils; Node has no binding for it). Returns
 * false when it could not (no such command, a failure): the caller then makes each file and folder
 * durable itself, so a write error is reported by that fsync, never lost. `folder` must be a path no
 * untrusted code can swap (a workspace's real root, a store folder): `sync` opens it by name.
 */
export function syncFilesystem(folder: string): Promise<boolean> {
  if (unavailable) return Promise.resolve(false);
  return new Promise((resolve) => {
    execFile("sync", ["-f", "--", folder], { windowsHide: true }, (error) => {
      if (error && (error as NodeJS.ErrnoException).code === "ENOENT") unavailable = true;
      resolve(!error);
    });
  });
}
