import { appendFile, mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { runBackendConformance } from "../../src/testing/index.js";
import { fsConformanceBackends } from "../helpers/fs-conformance-backends.js";

const { create, destroy, rootOf } = fsConformanceBackends();

runBackendConformance({
  name: "fs",
  create,
  destroy,
  lacks: {
    writeBlobs:
      "a capture's blobs are files of their own, as cheap alone as in a batch; a scan's are batched (writeScanBlobs)",
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
