// A process of the PostgreSQL benchmark (bench/postgres.bench.ts), on either backend:
//   appends <count>: appends <count> durable events, one by one, to its session, then prints the ms it took;
//   holds: takes the session's lock, prints "held", and keeps it until it is killed.
// Usage: node --import tsx bench/postgres.child.ts <fs root | postgres url> <schema> <sessionId> appends <count>|holds
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
} else {
  const store = new SessionStore({ backend, durability: "fsync", lockIdleMs: 60_000 });
  await store.append(id, messageEvent); // the lock taken, the connection made: not timed
  const started = performance.now();
  for (let i = 0; i < Number(count); i++) await store.append(id, messageEvent);
  process.stdout.write(`${performance.now() - started}\n`);
  await store.close();
  await backend.close();
}
