// Child process for the pack crash test (src/backend/fs/blob-pack.ts): under the session lock, writes small blobs
// into the pack, then deletes a few and compacts it, forever, until SIGKILLed, so a kill lands in appends and,
// above all, in compactions (each one rewrites the whole pack: tens of ms). Prints "wrote <hash>" once a write
// resolved, "deleting <hash>" before each deletion, "compacting" before each compaction, "compacted" after.
// argv: root sessionId blobCount
import { createHash, randomBytes, randomInt } from "node:crypto";
import { fsBackend } from "../../src/backend/index.js";
import { SessionLayout } from "../../src/backend/fs/layout.js";
import { compactPack } from "../../src/backend/fs/blob-pack.js";

const [root, sessionId, count] = process.argv.slice(2);
if (!root || !sessionId) throw new Error("usage: pack-writer root sessionId blobCount");

const backend = fsBackend({ root, lockStaleMs: 1000, packBlobsUnder: 4096 });
const locked = await backend.lock(sessionId);
const written: string[] = [];
for (let i = 0; i < Number(count ?? 2000); i++) {
  const bytes = randomBytes(randomInt(1500, 3500)); // incompressible: stored as they are, under 4 KiB
  const hash = createHash("sha256").update(bytes).digest("hex");
  await locked.writeBlob(hash, bytes, { durable: false }); // a kill, not a power loss: the page cache stays
  process.stdout.write(`wrote ${hash}\n`);
  written.push(hash);
}
for (;;) {
  for (const hash of written.splice(0, 10)) {
    process.stdout.write(`deleting ${hash}\n`);
    await locked.deleteBlob(hash);
  }
  process.stdout.write("compacting\n"); // pipes are written synchronously on Linux: the line is out before it
  compactPack(new SessionLayout(root), sessionId);
  process.stdout.write("compacted\n");
}
