// Child process for the reader memory tests: reads a session through the store, event by event, and
// prints what it read and the process's peak resident memory, so a reader's memory is measured in a
// process of its own (nothing the parent holds counts).
// argv: root sessionId, or a postgres:// URL, its schema and the sessionId
// Prints one JSON line: { count, last, peakRssMB } (last: 0 when nothing was read).
import { postgresBackend } from "../../src/backend/postgres/index.js";
import { SessionStore } from "../../src/index.js";

const args = process.argv.slice(2);
const [root, id] = args[0]?.startsWith("postgres://") ? [undefined, args[2]] : args;
if (!id || (root === undefined && !args[1])) throw new Error("usage: read-peak root sessionId | url schema sessionId");
const backend = root === undefined ? postgresBackend({ connectionString: args[0]!, schema: args[1]! }) : undefined;
const store = new SessionStore(backend ? { backend } : { root: root! });
let count = 0;
let last = 0;
for await (const event of store.read(id)) {
  count++;
  last = event.sequence;
}
await store.close();
await backend?.close();
const peakRssMB = (process.resourceUsage().maxRSS * 1024) / (1024 * 1024);
process.stdout.write(`${JSON.stringify({ count, last, peakRssMB })}\n`);
