import { appendFile, mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import type { StorageBackend } from "../../src/backend/types.js";
import { runBackendConformance } from "../../src/testing/index.js";
import { TempRoots } from "../helpers/temp-root.js";

const temps = new TempRoots();
const roots = new Map<StorageBackend, string>();
const rootOf = (backend: StorageBackend) => roots.get(backend)!;
// Low, so a lock left by a killed holder is taken over in ~2 s rather than 5.
const LOCK_STALE_MS = 2000;

runBackendConformance({
  name: "fs",
  async create() {
    const root = await temps.make("agent-tape-fs-conformance-");
    const backend = fsBackend({ root, lockStaleMs: LOCK_STALE_MS });
    roots.set(backend, root);
    return backend;
  },
  async destroy(backend) {
    await rm(rootOf(backend), { recursive: true, force: true });
    roots.delete(backend);
  },
  crashLeftState: {
    // Raw bytes at the end of events.jsonl: what a process killed mid-write leaves.
    appendToLog: (backend, id, text) => appendFile(join(rootOf(backend), id, "events.jsonl"), text),
    // A blob write goes to blobs/.incoming/<hash>-<random> first (src/backend/fs/blobs.ts).
    async leavePartialBlob(backend, id, hash, bytes) {
      const incoming = join(rootOf(backend), id, "blobs", ".incoming");
      await mkdir(incoming, { recursive: true });
      await writeFile(join(incoming, `${hash}-${Math.random().toString(16).slice(2, 10)}`), bytes);
    },
    async countPartialBlobs(backend, id) {
      return (await readdir(join(rootOf(backend), id, "blobs", ".incoming")).catch(() => [])).length;
    },
  },
  // The holder that died is a child process, so that check runs in the child-process tier instead.
  crashedHolderAbsent: "it needs a child process: test/backend/fs-conformance-crash.process.test.ts runs it",
});
