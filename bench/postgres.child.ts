// A process of the PostgreSQL benchmark (bench/postgres.bench.ts), on either backend:
//   appends <count>: says "ready" once warm, waits for a line on stdin, appends <count> durable events, one by
//     one, to its session, then prints the ms it took;
//   inserts <count>: the same with bare `pg` INSERTs of the same line into <schema>.bare_processes (made by the
//     parent), keyed by <sessionId>: what the server allows any client, without the store;
//   holds: takes the session's lock, prints "held", and keeps it until it is killed;
//   replays: reads the session through a store, one event at a time, and prints (JSON) how many MB the memory
//     left after a full collection rose during the read (heldMB: what the reader holds) and how many MB its
//     resident memory rose (rssMB); a process of its own, so nothing the benchmark held before counts.
// Usage: node --expose-gc --import tsx bench/postgres.child.ts <fs root | postgres url> <schema> <sessionId>
//   appends <count>|inserts <count>|holds|replays
import pg from "pg";
import { serializeEvent } from "../src/core/envelope.js";
import { postgresBackend } from "../src/backend/postgres/index.js";
import { fsBackend } from "../src/backend/index.js";
import { SessionStore } from "../src/index.js";
import { messageEvent } from "./workload.js";

const [where, schema, id, what, count] = process.argv.slice(2);
if (!where || !schema || !id || !what) throw new Error("usage: postgres.child.ts <where> <schema> <id> <what> [n]");
const backend = where.startsWith("postgres://")
  ? postgresBackend({ connectionString: where, schema })
  : fsBackend({ root: where });
if (what === "inserts") {
  await backend.close();
  const client = new pg.Client({ connectionString: where });
  await client.connect();
  const line = serializeEvent({
    ...{ v: 1, id: "x", sessionId: id, sequence: 1, createdAt: new Date().toISOString() },
    ...messageEvent,
  });
  let sequence = 0;
  const insert = () =>
    client.query(`INSERT INTO "${schema}".bare_processes (a, b, line) VALUES ($1, $2, $3)`, [id, ++sequence, line]);
  await timedAppends(insert, Number(count));
  await client.end();
} else if (what === "holds") {
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
  await timedAppends(() => store.append(id, messageEvent), Number(count));
  await store.close();
  await backend.close();
}

/**
 * The lock taken, the connection made, the code warm: not timed. Then "ready", and the timed appends start when the
 * parent says "go" on stdin, so the processes append at once, none while another is still starting. Warm means
 * 300 appends: a worker appends for hours, and with 50 the first timed appends still ran half-compiled code
 * while the JIT's threads took a core from four processes and their servers on two (docs/postgres.md).
 */
async function timedAppends(append: () => Promise<unknown>, count: number): Promise<void> {
  for (let i = 0; i < 300; i++) await append();
  process.stdout.write("ready\n");
  await new Promise((go) => process.stdin.once("data", go));
  process.stdin.pause();
  const started = performance.now();
  for (let i = 0; i < count; i++) await append();
  process.stdout.write(`${performance.now() - started}\n`);
}
