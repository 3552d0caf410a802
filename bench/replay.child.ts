// One replay, timed and memory-sampled in a process of its own: what earlier suites left on the
// heap cannot hide or inflate the memory figure, and the process state is the one named.
// Usage: node --expose-gc --import tsx bench/replay.child.ts <root> <sessionId> <store|raw> [<scratch root>]
// With a scratch root, one event is appended there first: a process that has written through a
// SessionStore (as an agent has, by the time it folds its session) is the state measured.
import { join } from "node:path";
import { SessionStore } from "../src/index.js";
import { collectGarbage } from "./harness.js";
import { countingVisitor, replayRaw, replayWithStore } from "./replay-readers.js";
import { messageEvent } from "./workload.js";

export interface ReplayRun {
  events: number;
  ms: number;
  /** CPU time of the whole process during the replay: less at the mercy of other load than `ms`. */
  cpuMs: number;
  rssGrowthMB: number;
  heapGrowthMB: number;
  /** Buffers outside the V8 heap (the read chunks). */
  externalGrowthMB: number;
}

const SAMPLE_EVERY = 2048;
const MB = 1024 * 1024;

const [root, sessionId, mode, scratchRoot] = process.argv.slice(2);
if (!root || !sessionId || (mode !== "store" && mode !== "raw"))
  throw new Error("usage: replay.child.ts <root> <sessionId> <store|raw> [<scratch root>]");
if (!(globalThis as { gc?: unknown }).gc)
  throw new Error("run with --expose-gc: without it the memory baseline holds garbage");

if (scratchRoot) {
  const writer = new SessionStore({ root: scratchRoot });
  const session = await writer.create();
  await writer.append(session.id, messageEvent);
  await writer.close();
}

const store = new SessionStore({ root });
const counter = countingVisitor();
collectGarbage();
collectGarbage();
const before = process.memoryUsage();
let peak = { rss: before.rss, heapUsed: before.heapUsed, external: before.external };
let seen = 0;
const visit = (event: { sequence: number }) => {
  counter.visit(event);
  if (++seen % SAMPLE_EVERY === 0) {
    const now = process.memoryUsage();
    peak = {
      rss: Math.max(peak.rss, now.rss),
      heapUsed: Math.max(peak.heapUsed, now.heapUsed),
      external: Math.max(peak.external, now.external),
    };
  }
};
const started = performance.now();
const cpuBefore = process.cpuUsage();
if (mode === "store") await replayWithStore(store, sessionId, visit);
else await replayRaw(join(root, sessionId, "events.jsonl"), visit);
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
await store.close();

const result: ReplayRun = {
  events: counter.result().events,
  ms,
  cpuMs: (cpu.user + cpu.system) / 1000,
  rssGrowthMB: (peak.rss - before.rss) / MB,
  heapGrowthMB: (peak.heapUsed - before.heapUsed) / MB,
  externalGrowthMB: (peak.external - before.external) / MB,
};
process.stdout.write(JSON.stringify(result) + "\n");
