import { open } from "node:fs/promises";
import { join } from "node:path";
import { SessionStore } from "../src/index.js";
import { interleavedRounds, settleDisk, throughput, timeIt, type Suite } from "./harness.js";
import { messageEvent, messageLine } from "./workload.js";

const APPENDERS = 64;

/**
 * Group commit: 64 concurrent appenders (each awaiting its own appends in a loop) on a
 * durability "batch" store, against the same store in "fsync" mode appending one at a time.
 * A third contender, raw group commit (64 lines per write + fdatasync on a kept-open fd), is
 * the ceiling: it shows how much of batch mode's time is the store's own work.
 */
export const batchSuite: Suite = {
  name: "batch",
  async run({ quick, tempDir }) {
    const perAppender = quick ? 30 : 150;
    const batchEvents = APPENDERS * perAppender;
    const sequentialEvents = quick ? 300 : 1500;
    const rounds = quick ? 3 : 7;
    const dir = await tempDir();
    const batchStore = new SessionStore({ root: join(dir, "batch"), durability: "batch" });
    const fsyncStore = new SessionStore({ root: join(dir, "fsync"), durability: "fsync" });
    const line = messageLine("01JBENCHBATCH00000000000000", 1);
    const group = Buffer.concat(Array.from({ length: APPENDERS }, () => line));
    let round = 0;
    try {
      const samples = await interleavedRounds(rounds, {
        batch: async () => {
          const session = await batchStore.create();
          await settleDisk(dir); // before the warm-up append: a slow sync must not outlast the lease's idle time
          await batchStore.append(session.id, messageEvent);
          return timeIt(async () => {
            await Promise.all(
              Array.from({ length: APPENDERS }, async () => {
                for (let i = 0; i < perAppender; i++) await batchStore.append(session.id, messageEvent);
              }),
            );
          });
        },
        fsyncSequential: async () => {
          const session = await fsyncStore.create();
          await settleDisk(dir); // before the warm-up append: a slow sync must not outlast the lease's idle time
          await fsyncStore.append(session.id, messageEvent);
          return timeIt(async () => {
            for (let i = 0; i < sequentialEvents; i++) await fsyncStore.append(session.id, messageEvent);
          });
        },
        rawGroupCommit: async () => {
          const fh = await open(join(dir, `raw-group-${round++}.jsonl`), "a");
          try {
            await settleDisk(dir);
            return await timeIt(async () => {
              for (let i = 0; i < perAppender; i++) {
                await fh.write(group);
                await fh.datasync();
              }
            });
          } finally {
            await fh.close();
          }
        },
      });
      const batch = throughput(`SessionStore "batch", ${APPENDERS} appenders`, batchEvents, samples.batch);
      const sequential = throughput('SessionStore "fsync", sequential', sequentialEvents, samples.fsyncSequential);
      const raw = throughput(`raw fd, ${APPENDERS} lines per write+datasync`, batchEvents, samples.rawGroupCommit);
      return [
        {
          suite: "batch (group commit) vs fsync per append",
          ours: batch,
          baseline: sequential,
          ratio: batch.value / sequential.value,
          target: { op: ">=", value: 20, on: "ratio" },
          notes: `${APPENDERS} x ${perAppender} appends vs ${sequentialEvents} sequential, ${rounds} rounds`,
        },
        {
          suite: "batch vs raw group commit (ceiling)",
          ours: batch,
          baseline: raw,
          ratio: batch.value / raw.value,
          target: undefined,
          notes: "how close group commit gets to the disk's limit",
        },
      ];
    } finally {
      await Promise.all([batchStore.close(), fsyncStore.close()]);
    }
  },
};
