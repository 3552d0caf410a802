import { join } from "node:path";
import { SessionStore } from "../src/index.js";
import { settleDisk, type Suite } from "./harness.js";
import { messageEvent } from "./workload.js";

/**
 * Continuous fsync'ed appends from one writer, each timed: the tail, not the mean. The lease used
 * to hand the lock over once a second even with nobody waiting (a release, a 25 ms pause and a
 * re-take), a stall a median hides. Target: p99.9 within 5x p50.
 */
export const appendLatencySuite: Suite = {
  name: "append-latency",
  async run({ quick, tempDir }) {
    const seconds = quick ? 3 : 10;
    const dir = await tempDir();
    const store = new SessionStore({ root: join(dir, "store"), durability: "fsync" });
    const latencies: number[] = [];
    try {
      const session = await store.create();
      await settleDisk(dir);
      await store.append(session.id, messageEvent); // takes the lease
      const until = performance.now() + seconds * 1000;
      while (performance.now() < until) {
        const started = performance.now();
        await store.append(session.id, messageEvent);
        latencies.push(performance.now() - started);
      }
    } finally {
      await store.close();
    }
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
    const p50 = at(0.5);
    const p99 = at(0.99);
    const p999 = at(0.999);
    return [
      {
        suite: "append latency: p99.9 vs p50, one writer, fsync",
        ours: { label: "p99.9", value: p999 / 1000, unit: "s" },
        baseline: { label: "p50", value: p50 / 1000, unit: "s" },
        ratio: p999 / p50,
        target: { op: "<=", value: 5, on: "ratio" },
        notes:
          `${latencies.length} appends in ${seconds} s; p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, ` +
          `p99.9 ${p999.toFixed(2)} ms, max ${latencies[latencies.length - 1]!.toFixed(1)} ms`,
        details: { p50, p99, p999, max: latencies[latencies.length - 1]!, appends: latencies.length },
      },
    ];
  },
};
