// Child process for the rewind concurrency test: appends numbered ticks to a session in a loop,
// printing "<n> <sequence>" once each append has resolved, until its stdin ends.
// argv: root sessionId
import { SessionStore } from "../../src/index.js";

const [root, sessionId] = process.argv.slice(2);
if (!root || !sessionId) throw new Error("usage: rewind-appender root sessionId");

const store = new SessionStore({ root, lockStaleMs: 2000 });
let stop = false;
process.stdin.on("end", () => (stop = true)).resume();
for (let n = 0; !stop; n++) {
  const event = await store.append(sessionId, { type: "message", payload: { role: "user", content: `tick ${n}` } });
  process.stdout.write(`${n} ${event.sequence}\n`);
}
await store.close();
process.stdout.write("done\n");
