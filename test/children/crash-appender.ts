// Child process for the crash test: appends forever, noting each sequence once its append has resolved.
// The parent kills it with SIGKILL; every noted sequence must then be on disk.
// argv: root sessionId round durability inFlight (appends issued together, to exercise group commit) acks
// Acks go to the file `acks` with a synchronous write: once written, the kernel has them whatever kills
// the process. stdout is no place for them: a pipe the parent is slow to drain (a loaded machine) turns
// Node's writes asynchronous, and a SIGKILL then drops the queued ones (seen: 227 acks lost in one round).
// The first sequence is also printed, so the parent can wait for the first append.
import { openSync, writeSync } from "node:fs";
import { SessionStore, type Durability } from "../../src/index.js";

const [root, sessionId, round, durability, inFlight, acks] = process.argv.slice(2);
if (!root || !sessionId || !acks)
  throw new Error("usage: crash-appender root sessionId round durability inFlight acks");
const ackFd = openSync(acks, "a");
let printed = false;

const store = new SessionStore({ root, lockStaleMs: 2000, durability: (durability ?? "fsync") as Durability });
const together = Math.max(1, Number(inFlight ?? 1));
for (let n = 0; ; n += together) {
  const batch: Promise<void>[] = [];
  for (let k = n; k < n + together; k++) {
    const content = `round ${round} event ${k}`;
    batch.push(
      store.append(sessionId, { type: "message", payload: { role: "user", content } }).then((event) => {
        writeSync(ackFd, `${event.sequence}\n`);
        if (!printed) process.stdout.write(`${event.sequence}\n`);
        printed = true;
      }),
    );
  }
  await Promise.all(batch);
}
