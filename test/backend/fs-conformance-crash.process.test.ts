// The fs backend's lock area of the conformance suite with its one check that needs another process: a holder
// that took the lock and was SIGKILLed. The unit tier runs every area (test/backend/fs-conformance.test.ts)
// and skips that one check there, naming this file.
import { rm } from "node:fs/promises";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import type { StorageBackend } from "../../src/backend/types.js";
import { runLockConformance } from "../../src/testing/index.js";
import { Child } from "../helpers/children.js";
import { TempRoots } from "../helpers/temp-root.js";

const temps = new TempRoots();
const roots = new Map<StorageBackend, string>();
// Low, so a lock left by a killed holder is taken over in ~2 s rather than 5.
const LOCK_STALE_MS = 2000;

runLockConformance({
  name: "fs",
  async create() {
    const root = await temps.make("agent-tape-fs-conformance-");
    const backend = fsBackend({ root, lockStaleMs: LOCK_STALE_MS });
    roots.set(backend, root);
    return backend;
  },
  async destroy(backend) {
    await rm(roots.get(backend)!, { recursive: true, force: true });
    roots.delete(backend);
  },
  // Another process takes the lock and is SIGKILLed holding it.
  async crashedHolder(backend, id) {
    const holder = new Child("hold-session-lock.ts", [roots.get(backend)!, id, String(LOCK_STALE_MS)]);
    await holder.waitForLine((line) => line === "locked");
    holder.kill("SIGKILL");
    await holder.done();
  },
});
