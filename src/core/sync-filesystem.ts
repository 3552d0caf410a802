import { execFile } from "node:child_process";
import { HelperThread } from "./helper-thread.js";

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
 *
 * Starting a process blocks the thread that asks until the child has replaced itself with `sync` (libuv waits
 * for it), and the longer the more memory the process maps: measured here 6 ms at 44 MB resident, 12 ms at 100,
 * 24 ms at 300, 34 ms at 600. In a process past WORKER_FROM_RSS it is started from a worker thread, so the event
 * loop is not held (it was the longest stall of a 1,000-file rewind: docs/ARCHITECTURE.md, "Batched file work");
 * below, here, since a worker costs a small process more CPU than the wait (a crash test's children: +20 %).
 */
export async function syncFilesystem(folder: string): Promise<boolean> {
  if (unavailable) return false;
  const start = spawner.started || process.memoryUsage.rss() >= WORKER_FROM_RSS ? startFromWorker : undefined;
  const outcome = await (start ?? startHere)(folder);
  if (outcome === "missing") unavailable = true;
  return outcome === "synced";
}

/**
 * Called as soon as a batch of `files` is known to come (a rewind's plan, an undo's): when its wait will be a
 * syncfs started from the worker thread, starts that thread now. Booting it takes tens of milliseconds, which
 * the first large rewind of a process waited for at its last step (docs/ARCHITECTURE.md, "Batched file work").
 */
export function readySyncFilesystem(files: number): void {
  if (!unavailable && files >= SYNC_FILESYSTEM_FROM && process.memoryUsage.rss() >= WORKER_FROM_RSS) spawner.warm();
}

/** Resident memory from which `sync` is started from a worker thread (see {@link syncFilesystem}). */
const WORKER_FROM_RSS = 128 * 1024 * 1024;

type Outcome = "synced" | "failed" | "missing";

function startHere(folder: string): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile("sync", ["-f", "--", folder], { windowsHide: true }, (error) => {
      if (!error) resolve("synced");
      else resolve((error as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "failed");
    });
  });
}

// The worker: runs `sync -f -- <folder>` for each job and answers with the outcome.
const spawner = new HelperThread<string, Outcome>(`
const { parentPort } = require("node:worker_threads");
const { execFile } = require("node:child_process");
parentPort.on("message", ({ id, job }) => {
  execFile("sync", ["-f", "--", job], { windowsHide: true }, (error) => {
    const answer = !error ? "synced" : error.code === "ENOENT" ? "missing" : "failed";
    parentPort.postMessage({ id, answer });
  });
});
`);

/** `sync -f` from the worker thread; from here when the thread could not start or died. */
async function startFromWorker(folder: string): Promise<Outcome> {
  return (await spawner.ask(folder)) ?? startHere(folder);
}
