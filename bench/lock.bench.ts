import { join } from "node:path";
import { SessionStore } from "../src/index.js";
import { interleavedRounds, settleDisk, throughput, timeIt, type Suite } from "./harness.js";
import { messageEvent } from "./workload.js";

/**
 * What the cross-process lock costs on a fsynced append: taken and released around every append
 * (lockIdleMs: 0) against the default lease, which keeps it across operations. This is the
 * figure that decides the locking design, so both throughputs and the per-append
 * overhead are reported; it has no pass/fail target.
 */
export const lockSuite: Suite = {
  name: "lock",
  async run({ quick, tempDir }) {
    const events = quick ? 200 : 600;
    const rounds = quick ? 3 : 9;
    const dir = await tempDir();
    const perAppend = new SessionStore({ root: join(dir, "per-append"), durability: "fsync", lockIdleMs: 0 });
    const leased = new SessionStore({ root: join(dir, "lease"), durability: "fsync" });
    const appendSequentially = (store: SessionStore) => async () => {
      const session = await store.create();
      await settleDisk(dir); // before the warm-up append: a slow sync must not outlast the lease's idle time
      await store.append(session.id, messageEvent);
      return timeIt(async () => {
        for (let i = 0; i < events; i++) await store.append(session.id, messageEvent);
      });
    };
    try {
      const samples = await interleavedRounds(rounds, {
        perAppend: appendSequentially(perAppend),
        lease: appendSequentially(leased),
      });
      const ours = throughput("lock per append (lockIdleMs: 0)", events, samples.perAppend);
      const baseline = throughput("lease (default)", events, samples.lease);
      const usPerAppend = (figure: { value: number }) => 1e6 / figure.value;
      const extraUs = usPerAppend(ours) - usPerAppend(baseline);
      const overheadPercent = (extraUs / usPerAppend(baseline)) * 100;
      return [
        {
          suite: "lock per append vs lease",
          ours,
          baseline,
          ratio: ours.value / baseline.value,
          target: undefined,
          details: { perAppendUs: usPerAppend(ours), leaseUs: usPerAppend(baseline), extraUs, overheadPercent },
          notes:
            `per-append lock adds ${extraUs.toFixed(0)} µs (+${overheadPercent.toFixed(0)} %) ` +
            `to a ${usPerAppend(baseline).toFixed(0)} µs fsynced append`,
        },
      ];
    } finally {
      await Promise.all([perAppend.close(), leased.close()]);
    }
  },
};
