// Child process that rewinds a session's conversation once and prints {"ok":true,"marker":n} or {"ok":false,"code":…}.
// argv: root sessionId toSequence
import { SessionStore, isAgentTapeError, rewind } from "../../src/index.js";

const [root, sessionId, toSequence] = process.argv.slice(2);
if (!root || !sessionId || !toSequence) throw new Error("usage: rewind-once root sessionId toSequence");

const store = new SessionStore({ root, lockStaleMs: 2000, lockWaitMs: 2000 });
try {
  const report = await rewind(store, sessionId, { toSequence: Number(toSequence), mode: "conversation" });
  process.stdout.write(JSON.stringify({ ok: true, marker: report.markerSequence }) + "\n");
} catch (error) {
  if (!isAgentTapeError(error)) throw error;
  process.stdout.write(JSON.stringify({ ok: false, code: error.code }) + "\n");
} finally {
  await store.close();
}
