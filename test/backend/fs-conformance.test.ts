import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import type { StorageBackend } from "../../src/backend/types.js";
import { runBackendConformance } from "../../src/testing/index.js";

const roots = new Map<StorageBackend, string>();

runBackendConformance({
  name: "fs",
  async create() {
    const root = await mkdtemp(join(tmpdir(), "agent-tape-fs-conformance-"));
    const backend = fsBackend({ root });
    roots.set(backend, root);
    return backend;
  },
  async destroy(backend) {
    await rm(roots.get(backend)!, { recursive: true, force: true });
    roots.delete(backend);
  },
});
