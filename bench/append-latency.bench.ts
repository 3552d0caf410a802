import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { SessionStore } from "../src/index.js";
import { settleDisk, type Row, type Suite } from "./harness.js";
import { messageEvent, messageLine } from "./workload.js";

/**
 * Continuous fsync'ed appends from one writer, each timed: the tail, not the mean. The lease used
 * to hand the lock over once a second even with nobody waiting (a release, a 25 ms pause and a
 * re-take), a stall a median hides. Target: p99.9 within 5x p50.
 *
 * The disk has a tail of its own, so the same loop runs without the library in the same run: the same
 * line written by one `write` on a descriptor opened O_DSYNC, as the store writes it. The two alternate
 * in one-second blocks, so both meet the same disk weather; the raw tail is the floor ours stands on.
 */
export const appendLatencySuite: Suite = {
  name: "append-latency",
  async run({ quick, tempDir }) {
    const seconds = quick ? 3 : 10;
    const dir = await tempDir();
    const store = new SessionStore({ root: join(dir, "store"), durability: "fsync" });
    const ours: number[] = [];
    const raw: number[] = [];
    const rawFile = await open(
      join(dir, "raw.jsonl"),
      constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC,
    );
    try {
      const session = await store.create();
      await settleDisk(dir);
      await store.append(session.id, messageEvent); // takes the lease
      let rawSequence = 0;
      for (let block = 0; block < seconds; block++) {
        const storeUntil = performance.now() + 1000;
        while (performance.now() < storeUntil) {
          const started = performance.now();
          await store.append(session.id, messageEvent);
          ours.push(performance.now() - started);
        }
        const rawUntil = performance.now() + 1000;
        while (performance.now() < rawUntil) {
          const line = messageLine(session.id, ++rawSequence); // built per append, as the store builds its line
          const started = performance.now();
          await rawFile.write(line);
          raw.push(performance.now() - started);
        }
      }
    } finally {
      await rawFile.close();
      await store.close();
    }
    const o = tail(ours);
    const r = tail(raw);
    const describe = (t: Tail) =>
      `p50 ${t.p50.toFixed(2)} ms, p99 ${t.p99.toFixed(2)} ms, ` +
      `p99.9 ${t.p999.toFixed(2)} ms, max ${t.max.toFixed(1)} ms`;
    const rows: Row[] = [
      {
        suite: "append latency: p99.9 vs p50, one writer, fsync",
        ours: { label: "p99.9", value: o.p999 / 1000, unit: "s" },
        baseline: { label: "p50", value: o.p50 / 1000, unit: "s" },
        ratio: o.p999 / o.p50,
        target: { op: "<=", value: 5, on: "ratio" },
        notes: `${ours.length} appends in ${seconds} one-second blocks; ${describe(o)}`,
        details: { ...o, appends: ours.length },
      },
      {
        suite: "append latency, raw O_DSYNC fd: p99.9 vs p50 (the disk's own tail)",
        ours: { label: "raw p99.9", value: r.p999 / 1000, unit: "s" },
        baseline: { label: "raw p50", value: r.p50 / 1000, unit: "s" },
        ratio: r.p999 / r.p50,
        target: undefined,
        notes: `${raw.length} writes, alternating with ours; ${describe(r)}`,
        details: { ...r, appends: raw.length },
      },
      {
        suite: "append latency p99.9: store vs raw O_DSYNC fd",
        ours: { label: "SessionStore p99.9", value: o.p999 / 1000, unit: "s" },
        baseline: { label: "raw fd p99.9", value: r.p999 / 1000, unit: "s" },
        ratio: o.p999 / r.p999,
        target: undefined,
        notes: `p99: ${o.p99.toFixed(2)} ms vs ${r.p99.toFixed(2)} ms`,
      },
    ];
    return rows;
  },
};

interface Tail {
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

function tail(latencies: number[]): Tail {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p99: at(0.99), p999: at(0.999), max: sorted[sorted.length - 1]! };
}
