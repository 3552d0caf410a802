import { accessSync, constants, statfsSync } from "node:fs";

// Where the tests make their temp folders (docs/testing.md, "Where the temp folders live"). The tests prove what
// the library does through file-system calls (which it makes, in which order, what a kill -9 leaves), not how fast
// a disk is: on a tmpfs an fsync returns at once and the suite takes about a third less time, every test the
// same. A kill -9 leaves the page cache as it is on either, so the crash tests see the same states.
//
// Chosen once, in vitest.config.ts, before any worker starts (workers and child processes inherit TMPDIR):
// - TMPDIR already set: kept, whatever it is;
// - AGENT_TAPE_TEST_ON_DISK=1: the system's default temp folder (/tmp here, on the disk), as CI's Node 22
//   line runs (.ci/run);
// - otherwise /dev/shm when it is a writable tmpfs with room to spare, else the default.

const TMPFS = "/dev/shm";
/** The largest tests write a few hundred MB at once (a 300,000-event batch, a forked 200,000-event log). */
const ROOM_NEEDED = 2 * 1024 ** 3;
const TMPFS_MAGIC = 0x01021994;

/** The TMPDIR the tests run with, or undefined for the system's default. */
export function testTempRoot(env: NodeJS.ProcessEnv): string | undefined {
  if (env.TMPDIR) return env.TMPDIR;
  if (env.AGENT_TAPE_TEST_ON_DISK === "1") return undefined;
  try {
    accessSync(TMPFS, constants.W_OK);
    const fs = statfsSync(TMPFS);
    return fs.type === TMPFS_MAGIC && fs.bavail * fs.bsize >= ROOM_NEEDED ? TMPFS : undefined;
  } catch {
    return undefined; // no /dev/shm (macOS), or not ours to write
  }
}
