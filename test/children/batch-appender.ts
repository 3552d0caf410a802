// Child process for the appendMany crash test: appends batches of `size` events with appendMany, forever,
// noting each batch once its appendMany has resolved. The parent kills it with SIGKILL mid-write; every
// noted batch must then be on disk whole, and an unnoted one whole or not at all.
// argv: root sessionId durability size acks
// Acks go to the file `acks` with a synchronous write (see crash-appender.ts for why not stdout). Before each
// batch the child prints "batch <k>", so the parent knows the write is about to start.
import { openSync, writeSync } from "node:fs";
import { SessionStore, type Durability } from "../../src/index.js";

const [root, sessionId, durability, size, acks] = process.argv.slice(2);
if (!root || !sessionId || !durability || !size || !acks)
  throw new Error("usage: batch-appender root sessionId durability size acks");
const ackFd = openSync(acks, "a");
const store = new SessionStore({ root, lockStaleMs: 2000, durability: durability as Durability });
// ~700 bytes a line: 40k events make a ~30 MB batch, the size the crash was seen with.
const filler = "x".repeat(500);

for (let k = 0; ; k++) {
  const events = Array.from({ length: Number(size) }, (_, i) => ({
    type: "message" as const,
    payload: { role: "user" as const, content: `batch ${k} event ${i} ${filler}` },
  }));
  process.stdout.write(`batch ${k}\n`);
  const written = await store.appendMany(sessionId, events);
  writeSync(ackFd, `${k} ${written[0]!.sequence} ${written.at(-1)!.sequence}\n`);
}
