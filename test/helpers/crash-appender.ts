// Child process for the crash test: appends forever, printing each sequence once its append has resolved.
// The parent kills it with SIGKILL; every printed sequence must then be on disk.
// argv: root sessionId round durability
import { SessionStore, type Durability } from "../../src/index.js";

const [root, sessionId, round, durability] = process.argv.slice(2);
if (!root || !sessionId) throw new Error("usage: crash-appender root sessionId round durability");

const store = new SessionStore({ root, lockStaleMs: 2000, durability: (durability ?? "fsync") as Durability });
for (let n = 0; ; n++) {
  const event = await store.append(sessionId, { type: "message", payload: { role: "user", content: `round ${round} event ${n}` } });
  // Pipes are written synchronously on Linux, so a printed sequence left the process before the next append.
  process.stdout.write(`${event.sequence}\n`);
}
