import { spawn } from "node:child_process";
import { once } from "node:events";
import { appendFile, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import type { StorageBackend } from "../../src/backend/types.js";
import { runBackendConformance } from "../../src/testing/index.js";

const roots = new Map<StorageBackend, string>();
const rootOf = (backend: StorageBackend) => roots.get(backend)!;
// Low, so a lock left by a killed holder is taken over in ~2 s rather than 5.
const LOCK_STALE_MS = 2000;

runBackendConformance({
  name: "fs",
  async create() {
    const root = await mkdtemp(join(tmpdir(), "agent-tape-fs-conformance-"));
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
  // Another process takes the lock and is SIGKILLed holding it.
  async crashedHolder(backend, id) {
    const module = new URL("../../src/backend/fs/fs-backend.ts", import.meta.url).href;
    const script = [
      `const { fsBackend } = await import(${JSON.stringify(module)});`,
      `const backend = fsBackend({ root: ${JSON.stringify(rootOf(backend))}, lockStaleMs: ${LOCK_STALE_MS} });`,
      `await backend.lock(${JSON.stringify(id)}, { waitMs: 10000 });`,
      `process.stdout.write("locked\\n");`,
      "setInterval(() => {}, 1000);",
    ].join("\n");
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = once(child, "close");
    let out = "";
    for await (const chunk of child.stdout) {
      out += String(chunk);
      if (out.includes("locked\n")) break;
    }
    if (!out.includes("locked\n")) throw new Error(`the lock-holding child ended without the lock: ${out}`);
    child.kill("SIGKILL");
    await exited;
  },
});
