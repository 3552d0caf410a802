// Child process for the crash test: appends forever, printing each sequence once its append has resolved.
// The parent kills it with SIGKILL; every printed sequence must then be on disk.
// argv: root sessionId round durability inFlight (appends issued together, to exercise group commit)
import { SessionStore, type Durability } from "../../src/index.js";

const [root, sessionId, round, durability, inFlight] = process.argv.slice(2);
if (!root || !sessionId) throw new Error("usage: crash-appender root sessionId round durability inFlight");

const store = new SessionStore({ root, lockStaleMs: 2000, durability: (durability ?? "fsync") as Durability });
const together = Math.max(1, Number(inFlight ?? 1));
for (let n = 0; ; n += together) {
  const batch: Promise<void>[] = [];
  for (let k = n; k < n + together; k++) {
    const content = `round ${round} event ${k}`;
    batch.push(
      store.append(sessionId, { type: "message", payload: { role: "user", content } }).then((event) => {
        // Pipes are written synchronously on Linux: a printed sequence left the process before anything else ran.
        process.stdout.write(`${event.sequence}\n`);
      }),
    );
  }
  await Promise.all(batch);
}
