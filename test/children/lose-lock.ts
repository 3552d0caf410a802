// Child process that loses its session lock while idle (the parent removes the lock folder, then
// ends our stdin), then carries on: it must not crash, and must report the loss once.
// argv: root sessionId
import { SessionStore, isAgentTapeError } from "../../src/index.js";

const [root, sessionId] = process.argv.slice(2);
if (!root || !sessionId) throw new Error("usage: lose-lock root sessionId");

const store = new SessionStore({ root, lockStaleMs: 2000, lockIdleMs: 60_000 });
await store.append(sessionId, { type: "message", payload: { role: "user", content: "1" } });
process.stdout.write("holding\n");
await new Promise<void>((resolve) => process.stdin.on("end", resolve).resume());
// proper-lockfile notices the loss on its next refresh, at most max(1000, lockStaleMs / 4) ms away.
await new Promise((resolve) => setTimeout(resolve, 2_500));
try {
  await store.append(sessionId, { type: "message", payload: { role: "user", content: "lost" } });
  process.stdout.write("appended without noticing\n");
} catch (error) {
  process.stdout.write(`${isAgentTapeError(error) ? error.code : String(error)}\n`);
}
const event = await store.append(sessionId, { type: "message", payload: { role: "user", content: "2" } });
process.stdout.write(`appended ${event.sequence}\n`);
await store.close();
