// Child process: appends one event, prints "appended <sequence>", and then keeps the session's lease until
// killed: a process killed right after a write. Its lease is kept (lockIdleMs of ten minutes) rather than
// left to the default 50 ms idle release, so a slow parent cannot find it already given up.
// argv: root sessionId lockStaleMs
import { SessionStore } from "../../src/index.js";

const [root, sessionId, staleMs] = process.argv.slice(2);
if (!root || !sessionId || !staleMs) throw new Error("usage: append-and-hold root sessionId lockStaleMs");

const store = new SessionStore({ root, lockStaleMs: Number(staleMs), lockIdleMs: 600_000 });
const event = await store.append(sessionId, { type: "message", payload: { role: "user", content: "the last word" } });
process.stdout.write(`appended ${event.sequence}\n`);
setInterval(() => undefined, 60_000);
