import { createHash, randomBytes } from "node:crypto";
import { readdir, readlink } from "node:fs/promises";
import { join } from "node:path";
import { fsBackend } from "../../src/backend/index.js";
import { openStore, tempDir } from "./fixture.js";

// For the tests of a pack's segments kept open between reads (src/backend/fs/pack-readers.ts).

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Past the kept reader's idle time (50 ms), with room for a loaded machine. */
export const IDLE_WAIT_MS = 200;

/**
 * The descriptors this process has open on pack segments under `root`, each as /proc names its file. Only those:
 * unit test files run in threads of one process, so other files' segments may be open beside them.
 */
export async function openSegments(root: string): Promise<string[]> {
  return (await segmentDescriptors(root)).map(([, target]) => target);
}

/** The numbers of the descriptors this process has open on pack segments under `root`. */
export async function openSegmentDescriptors(root: string): Promise<number[]> {
  return (await segmentDescriptors(root)).map(([fd]) => fd);
}

async function segmentDescriptors(root: string): Promise<[number, string][]> {
  const found: [number, string][] = [];
  for (const fd of await readdir("/proc/self/fd")) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => "");
    if (target.startsWith(`${root}/`) && /\/blobs\/pack\/\d{8}\.pack( \(deleted\))?$/.test(target))
      found.push([Number(fd), target]);
  }
  return found;
}

/** A session whose pack holds `count` incompressible 2,000-byte blobs (stored as they are). */
export async function packedSession(count: number) {
  const base = await tempDir("agent-tape-pack-readers-");
  const root = join(base, "root");
  const backend = fsBackend({ root, packBlobsUnder: 4096 });
  const { id } = await openStore({ backend }).create({});
  const blobs = Array.from({ length: count }, () => randomBytes(2000));
  const locked = await backend.lock(id);
  try {
    for (const bytes of blobs) await locked.writeBlob(sha256(bytes), bytes);
  } finally {
    await locked.release();
  }
  return { root, backend, id, blobs, hashes: blobs.map(sha256) };
}
