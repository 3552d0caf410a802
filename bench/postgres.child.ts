// A process of the PostgreSQL benchmark (bench/postgres.bench.ts), on either backend:
//   appends <count>: appends <count> durable events, one by one, to its session, then prints the ms it took;
//   holds: takes the session's lock, prints "held", and keeps it until it is killed;
//   replays: reads the session through a store, one event at a time, and prints how many MB its resident memory
//     rose above where it stood after a collection before the read (a process of its own: nothing the benchmark
//     held before counts, for either backend).
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
  (globalThis as { gc?: () => void }).gc?.();
  const start = process.memoryUsage().rss;
  let peak = start;
  let n = 0;
  for await (const _ of store.read(id)) if (++n % 5000 === 0) peak = Math.max(peak, process.memoryUsage().rss);
  process.stdout.write(`${Math.max(peak - start, 0) / 1024 / 1024}\n`);
  await store.close();
  await backend.close();
} else {
  const store = new SessionStore({ backend, durability: "fsync", lockIdleMs: 60_000 });
  await store.append(id, messageEvent); // the lock taken, the connection made: not timed
  const started = performance.now();
  for (let i = 0; i < Number(count); i++) await store.append(id, messageEvent);
  process.stdout.write(`${performance.now() - started}\n`);
  await store.close();
  await backend.close();
}
