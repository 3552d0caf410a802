// Child process for test/backend/fs-pack-readers.test.ts: under the session lock, deletes the blobs whose hashes
// it is given from the session's pack and compacts it (src/backend/fs/blob-pack.ts), then prints "compacted".
// argv: root sessionId hash...
import { fsBackend } from "../../src/backend/index.js";
import { SessionLayout } from "../../src/backend/fs/layout.js";
import { compactPack } from "../../src/backend/fs/blob-pack.js";

const [root, sessionId, ...hashes] = process.argv.slice(2);
if (!root || !sessionId) throw new Error("usage: pack-deleter root sessionId hash...");

const backend = fsBackend({ root, packBlobsUnder: 4096 });
const locked = await backend.lock(sessionId);
try {
  await locked.deleteBlobs!(hashes);
  compactPack(new SessionLayout(root), sessionId);
} finally {
  await locked.release();
}
process.stdout.write("compacted\n");
