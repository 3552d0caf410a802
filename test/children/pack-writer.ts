// Child process for the pack crash test (src/backend/fs/blob-pack.ts): under the session lock, writes small blobs
// into the pack (one at a time, and 25 at once as a run), then deletes a few and compacts it, forever, until
// SIGKILLed, so a kill lands in appends and, above all, in compactions (each one rewrites the whole pack: tens of
// ms). Prints "wrote <hash>" once a write resolved, "deleting <hash>" before each deletion, "compacting" before
// each compaction, "compacted" after.
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
// Every other group of 25 written together, as a scan writes them: a run of blobs in one append (pack-format.ts).
for (let i = 0; i < Number(count ?? 2000); i += 25) {
  const group = Array.from({ length: 25 }, () => {
    const bytes = randomBytes(randomInt(1500, 3500)); // incompressible: stored as they are, under 4 KiB
    return [createHash("sha256").update(bytes).digest("hex"), bytes] as const;
  });
  // Not durable: a kill, not a power loss, is what this test is for (the page cache stays).
  if ((i / 25) % 2 === 1) await locked.writeScanBlobs!(group);
  else for (const [hash, bytes] of group) await locked.writeBlob(hash, bytes, { durable: false });
  for (const [hash] of group) {
    process.stdout.write(`wrote ${hash}\n`);
    written.push(hash);
  }
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
