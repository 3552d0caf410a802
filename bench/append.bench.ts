import { closeSync, fdatasyncSync, openSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { SessionStore } from "../src/index.js";
import { interleavedRounds, settleDisk, throughput, timeIt, type Suite } from "./harness.js";
import { messageEvent, messageLine } from "./workload.js";

/**
 * Sequential durable appends: SessionStore (durability "fsync", default lease) against a
 * kept-open fd writing the same line and fdatasync-ing it, one line at a time.
 * Two raw baselines, because they differ by ~1.7x on this VM: fs/promises (each call is a
 * libuv thread-pool round trip, the path an async library takes) and blocking sync calls
 * (no round trip: what an append costs at best; docs/ARCHITECTURE.md, "On disk"). Both must hold the
 * 0.8x target.
 */
export const appendSuite: Suite = {
  name: "append",
  async run({ quick, tempDir }) {
    const events = quick ? 300 : 1000;
    const rounds = quick ? 3 : 9;
    const dir = await tempDir();
    const store = new SessionStore({ root: join(dir, "store"), durability: "fsync" });
    const line = messageLine("01JBENCHAPPEND0000000000000", 1);
    let round = 0;
    try {
      const samples = await interleavedRounds(rounds, {
        store: async () => {
          const session = await store.create();
          await settleDisk(dir); // before the warm-up append: a slow sync must not outlast the lease's idle time
          await store.append(session.id, messageEvent); // takes the lease: steady state is what is timed
          return timeIt(async () => {
            for (let i = 0; i < events; i++) await store.append(session.id, messageEvent);
          });
        },
        rawAsync: async () => {
          const fh = await open(join(dir, `raw-async-${round++}.jsonl`), "a");
          try {
            await settleDisk(dir);
            return await timeIt(async () => {
              for (let i = 0; i < events; i++) {
                await fh.write(line);
                await fh.datasync();
              }
            });
          } finally {
            await fh.close();
          }
        },
        rawSync: async () => {
          const fd = openSync(join(dir, `raw-sync-${round++}.jsonl`), "a");
          try {
            await settleDisk(dir);
            return await timeIt(async () => {
              for (let i = 0; i < events; i++) {
                writeSync(fd, line);
                fdatasyncSync(fd);
              }
            });
          } finally {
            closeSync(fd);
          }
        },
      });
      const ours = throughput('SessionStore "fsync"', events, samples.store);
      const rawAsync = throughput("raw fd, fs/promises write+datasync", events, samples.rawAsync);
      const rawSync = throughput("raw fd, writeSync+fdatasyncSync", events, samples.rawSync);
      const note = `${line.length} B lines, ${events} sequential appends x ${rounds} rounds`;
      return [
        {
          suite: "durable append vs raw async fd",
          ours,
          baseline: rawAsync,
          ratio: ours.value / rawAsync.value,
          target: { op: ">=", value: 0.8, on: "ratio" },
          notes: note,
        },
        {
          suite: "durable append vs raw sync fd",
          ours,
          baseline: rawSync,
          ratio: ours.value / rawSync.value,
          target: { op: ">=", value: 0.8, on: "ratio" },
          notes: note,
        },
      ];
    } finally {
      await store.close();
    }
  },
};
