// Child process for the stolen-lock test: appends, stalls past lockStaleMs while holding the lock, then
// appends more. Every acknowledged event is printed ("ack <sequence> <id>"), every failure ("err <code>").
// mode "block": the stall is an execSync (event loop blocked, as a long build does), after `before` appends.
// mode "pause": no stall of its own; the parent SIGSTOPs and SIGCONTs it while it appends.
// argv: root sessionId mode before after lockStaleMs
import { execSync } from "node:child_process";
import { SessionStore, isAgentTapeError } from "../../src/index.js";

const [root, sessionId, mode, before, after, lockStaleMs] = process.argv.slice(2);
if (!root || !sessionId || !mode) throw new Error("usage: stalled-appender root sessionId mode before after staleMs");

const session: string = sessionId;
const store = new SessionStore({
  root,
  lockStaleMs: Number(lockStaleMs ?? 2000),
  lockIdleMs: 60_000,
  lockMaxHoldMs: 60_000,
});
const staleMs = Number(lockStaleMs ?? 2000);
let n = 0;
async function appendOne(): Promise<void> {
  try {
    const event = await store.append(session, { type: "message", payload: { role: "user", content: `a${n++}` } });
    process.stdout.write(`ack ${event.sequence} ${event.id}\n`);
  } catch (error) {
    process.stdout.write(`err ${isAgentTapeError(error) ? error.code : String(error)}\n`);
  }
}
for (let i = 0; i < Number(before ?? 5); i++) await appendOne();
process.stdout.write("stalling\n");
if (mode === "block") execSync(`sleep ${(staleMs * 2.5) / 1000}`);
for (let i = 0; i < Number(after ?? 300); i++) await appendOne();
await store.close().catch(() => undefined);
process.stdout.write("done\n");
