// Child process that holds a session's lock until its stdin ends: "another process holds the lock".
// argv: root sessionId
import { SessionStore } from "../../src/index.js";

const [root, sessionId] = process.argv.slice(2);
if (!root || !sessionId) throw new Error("usage: hold-lock root sessionId");

const store = new SessionStore({ root, lockStaleMs: 2000 });
const stdinEnded = new Promise<void>((resolve) => {
  process.stdin.on("end", resolve).resume();
});
await store.withLock(sessionId, async (locked) => {
  process.stdout.write(`held ${locked.lastSequence}\n`);
  await stdinEnded;
});
await store.close();
process.stdout.write("released\n");
