// A process of the PostgreSQL benchmark (bench/postgres.bench.ts), on either backend:
//   appends <count>: says "ready" once warm, waits for a line on stdin, appends <count> durable events, one by
//     one, to its session, then prints the ms it took;
//   holds: takes the session's lock, prints "held", and keeps it until it is killed;
//   replays: reads the session through a store, one event at a time, and prints (JSON) how many MB the memory
//     left after a full collection rose during the read (heldMB: what the reader holds) and how many MB its
//     resident memory rose (rssMB); a process of its own, so nothing the benchmark held before counts.
// Usage: node --expose-gc --import tsx bench/postgres.child.ts <fs root | postgres url> <schema> <sessionId>
//   appends <count>|holds|replays
import { postgresBackend } from "../src/backend/postgres/index.js";
import { fsBackend } from "../src/backend/index.js";
import { SessionStore } from "../src/index.js";
import { messageEvent } from "./workload.js";

const [where, schema, id, what, count] = process.argv.slice(2);
if (!where || !schema || !id || !what) throw new Error("usage: postgres.child.ts <where> <schema> <id> <what> [n]");
const backend = where.startsWith("postgres://")
  ? postgresBackend({ connectionString: where, schema })
  : fsBackend({ root: where });
if (what === "holds") {
  await backend.lock(id, { waitMs: 30_000 });
  process.stdout.write("held\n");
  setInterval(() => undefined, 60_000);
} else if (what === "replays") {
  const store = new SessionStore({ backend });
  await store.head(id); // the connection made, the schema checked: not counted
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("postgres.child.ts replays needs node --expose-gc");
  // What the reader holds: every 5000 events, memory after a full collection (the garbage a fast reader makes
  // and the collector has not yet taken sizes RSS alone, whatever the reader holds), against the same before.
  const held = () => {
    gc();
    const { heapUsed, external, arrayBuffers } = process.memoryUsage();
    return heapUsed + external + arrayBuffers;
  };
  const start = { held: held(), rss: process.memoryUsage().rss };
  const peak = { ...start };
  let n = 0;
  for await (const _ of store.read(id))
    if (++n % 5000 === 0) {
      peak.held = Math.max(peak.held, held());
      peak.rss = Math.max(peak.rss, process.memoryUsage().rss);
    }
  const mb = (bytes: number) => Math.max(bytes, 0) / 1024 / 1024;
  process.stdout.write(`${JSON.stringify({ heldMB: mb(peak.held - start.held), rssMB: mb(peak.rss - start.rss) })}\n`);
  await store.close();
  await backend.close();
} else {
  const store = new SessionStore({ backend, durability: "fsync", lockIdleMs: 60_000 });
  // The lock taken, the connection made, the code warm: not timed. Then "ready", and the timed appends start when
  // the parent says "go" on stdin, so the processes append at once, none while another is still starting.
  for (let i = 0; i < 50; i++) await store.append(id, messageEvent);
  process.stdout.write("ready\n");
  await new Promise((go) => process.stdin.once("data", go));
  process.stdin.pause();
  const started = performance.now();
  for (let i = 0; i < Number(count); i++) await store.append(id, messageEvent);
  process.stdout.write(`${performance.now() - started}\n`);
  await store.close();
  await backend.close();
}
