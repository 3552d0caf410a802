// Child process for the big-batch memory tests: reads a session through the store, event by event, and
// prints what it read and the process's peak resident memory, so a reader's memory is measured in a
// process of its own (nothing the parent holds counts).
// argv: root sessionId
// Prints one JSON line: { count, last, peakRssMB } (last: 0 when nothing was read).
import { SessionStore } from "../../src/index.js";

const [root, id] = process.argv.slice(2);
if (!root || !id) throw new Error("usage: read-peak root sessionId");
const store = new SessionStore({ root });
let count = 0;
let last = 0;
for await (const event of store.read(id)) {
  count++;
  last = event.sequence;
}
await store.close();
const peakRssMB = (process.resourceUsage().maxRSS * 1024) / (1024 * 1024);
process.stdout.write(`${JSON.stringify({ count, last, peakRssMB })}\n`);
