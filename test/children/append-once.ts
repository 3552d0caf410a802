// Child process that tries one append and prints what happened as JSON:
// {"ok":true,"sequence":n} or {"ok":false,"code":…}.
// argv: root sessionId lockWaitMs content
import { SessionStore, isAgentTapeError } from "../../src/index.js";

const [root, sessionId, lockWaitMs, content] = process.argv.slice(2);
if (!root || !sessionId) throw new Error("usage: append-once root sessionId lockWaitMs content");

const store = new SessionStore({ root, lockStaleMs: 2000, lockWaitMs: Number(lockWaitMs ?? 1000) });
try {
  const event = await store.append(sessionId, {
    type: "message",
    payload: { role: "user", content: content ?? "from another process" },
  });
  process.stdout.write(JSON.stringify({ ok: true, sequence: event.sequence }) + "\n");
} catch (error) {
  if (!isAgentTapeError(error)) throw error;
  process.stdout.write(JSON.stringify({ ok: false, code: error.code }) + "\n");
} finally {
  await store.close();
}
