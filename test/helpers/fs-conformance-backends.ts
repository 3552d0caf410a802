import { rm } from "node:fs/promises";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import type { StorageBackend } from "../../src/backend/types.js";
import { tempDir } from "./fixture.js";

// Low, so a lock left by a killed holder is taken over in ~2 s rather than 5.
export const LOCK_STALE_MS = 2000;

/**
 * Fresh fs backends for a conformance run, each in its own temp root: `create` and `destroy` as the suite
 * takes them, and `rootOf` for the checks that plant files by hand.
 */
export function fsConformanceBackends() {
  const roots = new Map<StorageBackend, string>();
  return {
    rootOf: (backend: StorageBackend) => roots.get(backend)!,
    async create(): Promise<StorageBackend> {
      const root = await tempDir("agent-tape-fs-conformance-");
      const backend = fsBackend({ root, lockStaleMs: LOCK_STALE_MS });
      roots.set(backend, root);
      return backend;
    },
    async destroy(backend: StorageBackend): Promise<void> {
      await rm(roots.get(backend)!, { recursive: true, force: true });
      roots.delete(backend);
    },
  };
}
