import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { SessionStore } from "../src/index.js";
import type { ForkRun } from "./fork.child.js";
import type { Row, Suite } from "./harness.js";
import { writeLog } from "./workload.js";

const here = dirname(fileURLToPath(import.meta.url));
const runChild = promisify(execFile);
const MEMORY_GROWTH_LIMIT_MB = 64;

/**
 * `fork` of a long session, in a child process of its own (bench/fork.child.ts) that reports its
 * time and its peak memory over what it held before the fork. A fork streams the parent's log into
 * the new one, so its memory must not follow the log's length: 1M events within 64 MB of growth,
 * and a 5M-event session (a log of about 1.5 GB, past the largest string V8 can build) forks at all.
 */
export const forkSuite: Suite = {
  name: "fork",
  async run({ quick, tempDir, log }) {
    const sizes = quick ? [100_000, 500_000] : [1_000_000, 5_000_000];
    const rows: Row[] = [];
    for (const events of sizes) {
      const root = await tempDir();
      const store = new SessionStore({ root });
      let sessionId: string;
      try {
        sessionId = (await store.create({ title: "fork bench" })).id;
      } finally {
        await store.close();
      }
      const file = join(root, sessionId, "events.jsonl");
      await writeLog(file, sessionId, events);
      const logMB = (await stat(file)).size / 1024 / 1024;
      log(`  ${events} events, ${logMB.toFixed(0)} MB of log: forking`);
      const { stdout } = await runChild(
        process.execPath,
        ["--import", "tsx", join(here, "fork.child.ts"), root, sessionId],
        {
          cwd: dirname(here),
          maxBuffer: 1024 * 1024,
        },
      );
      const run = JSON.parse(stdout.trim().split("\n").pop()!) as ForkRun;
      if (run.lastSequence !== events + 1) throw new Error(`fork ended at ${run.lastSequence}, not ${events + 1}`);
      const growthMB = run.peakRssMB - run.rssBeforeMB;
      rows.push({
        suite: `fork: ${events.toLocaleString("en")} events, peak memory growth`,
        ours: { label: `fork of ${logMB.toFixed(0)} MB of log`, value: growthMB, unit: "MB" },
        baseline: undefined,
        ratio: undefined,
        target: { op: "<", value: MEMORY_GROWTH_LIMIT_MB, on: "ours" },
        notes:
          `${(run.ms / 1000).toFixed(1)} s; ` +
          `RSS ${run.rssBeforeMB.toFixed(0)} MB before, peak ${run.peakRssMB.toFixed(0)} MB`,
        details: { ms: run.ms, logMB, rssBeforeMB: run.rssBeforeMB, peakRssMB: run.peakRssMB },
      });
    }
    return rows;
  },
};
