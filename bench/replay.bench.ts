import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { SessionStore } from "../src/index.js";
import { interleavedRounds, median, seconds, settleDisk, timeIt, type Row, type Suite } from "./harness.js";
import type { ReplayRun } from "./replay.child.js";
import { writeLog } from "./workload.js";

const here = dirname(fileURLToPath(import.meta.url));
const MEMORY_LIMIT_MB = 64;
const runChild = promisify(execFile);

/**
 * Replay of a long log: the streamed `store.read()` against a raw chunked split + JSON.parse of
 * the same file. Every replay runs in a fresh child process (bench/replay.child.ts), which times
 * it and samples its memory, in two states:
 * - "resume": a process that has only read, as after a restart;
 * - "after an append": a process that has written through a SessionStore first, as an agent
 *   folding its session mid-run has. On Node 20 the first locked operation switches on
 *   AsyncLocalStorage's promise hooks for the whole process, so the two states differ.
 * And a third log of the same events, every line marked as one batch, as an undo writes what it puts back: the
 * store reads it against the unmarked log (a batch too big to hold is looked past, then streamed).
 */
export const replaySuite: Suite = {
  name: "replay",
  async run({ quick, tempDir, log }) {
    const events = quick ? 100_000 : 1_000_000;
    const rounds = quick ? 3 : 5;
    const root = await tempDir();
    const scratchRoot = await tempDir();
    const store = new SessionStore({ root });
    let sessionId: string;
    let batchSessionId: string;
    let bytes: number;
    try {
      sessionId = (await store.create({ title: "replay bench" })).id;
      const file = join(root, sessionId, "events.jsonl");
      const generatedMs = await timeIt(() => writeLog(file, sessionId, events));
      await settleDisk(root); // ~300 MB of dirty pages would otherwise be written back during later suites' fsyncs
      const info = await store.get(sessionId);
      if (info?.lastSequence !== events)
        throw new Error(`generated log ends at ${info?.lastSequence}, expected ${events}`);
      bytes = (await stat(file)).size;
      batchSessionId = (await store.create({ title: "replay bench, one batch" })).id;
      await writeLog(join(root, batchSessionId, "events.jsonl"), batchSessionId, events, { oneBatch: true });
      log(
        `  generated ${events.toLocaleString("en-US")} events, ${(bytes / 1024 / 1024).toFixed(0)} MB, ` +
          `in ${(generatedMs / 1000).toFixed(1)} s`,
      );
    } finally {
      await store.close();
    }

    const runs: Record<string, ReplayRun[]> = {};
    const replayIn =
      (name: string, mode: "store" | "raw", afterAppend: boolean, id = sessionId) =>
      async () => {
        const args = ["--expose-gc", "--import", "tsx", join(here, "replay.child.ts"), root, id, mode];
        if (afterAppend) args.push(scratchRoot);
        const { stdout } = await runChild(process.execPath, args, { cwd: dirname(here), maxBuffer: 1024 * 1024 });
        const run = JSON.parse(stdout.trim().split("\n").pop()!) as ReplayRun;
        if (run.events !== events) throw new Error(`${name} replay saw ${run.events} of ${events} events`);
        (runs[name] ??= []).push(run);
        return run.ms;
      };
    // The log was just written, so the page cache is warm: no warm-up round needed.
    const samples = await interleavedRounds(
      rounds,
      {
        storeResume: replayIn("storeResume", "store", false),
        rawResume: replayIn("rawResume", "raw", false),
        storeAfterAppend: replayIn("storeAfterAppend", "store", true),
        rawAfterAppend: replayIn("rawAfterAppend", "raw", true),
        storeOneBatch: replayIn("storeOneBatch", "store", false, batchSessionId),
      },
      { warmUp: false },
    );

    const count = events.toLocaleString("en-US");
    const perEvent = (figure: { value: number }) => `${((figure.value * 1e9) / events).toFixed(0)} ns/event`;
    const cpuSeconds = (name: string) => median((runs[name] ?? []).map((run) => run.cpuMs / 1000));
    const timeRow = (scenario: string, storeName: keyof typeof samples, rawName: keyof typeof samples): Row => {
      const ours = seconds("store.read()", samples[storeName]);
      const raw = seconds("raw 64 KB chunks + JSON.parse", samples[rawName]);
      const cpuRatio = cpuSeconds(storeName) / cpuSeconds(rawName);
      return {
        suite: `replay ${count} events, ${scenario}`,
        ours,
        baseline: raw,
        ratio: ours.value / raw.value,
        target: { op: "<=", value: 1.3, on: "ratio" },
        notes:
          `${perEvent(ours)} vs ${perEvent(raw)}; CPU time ${cpuRatio.toFixed(2)}x; ` +
          `${(bytes / events).toFixed(0)} B/event, ${rounds} rounds`,
        details: { events, bytes, cpuSeconds: cpuSeconds(storeName), rawCpuSeconds: cpuSeconds(rawName), cpuRatio },
      };
    };
    const peak = (names: string[], key: "rssGrowthMB" | "heapGrowthMB" | "externalGrowthMB") =>
      Math.max(...names.flatMap((name) => (runs[name] ?? []).map((run) => run[key])));
    const ourRuns = ["storeResume", "storeAfterAppend"];
    const rawRuns = ["rawResume", "rawAfterAppend"];
    return [
      timeRow("resume (fresh process)", "storeResume", "rawResume"),
      timeRow("after an append", "storeAfterAppend", "rawAfterAppend"),
      {
        suite: `replay ${count} events written as one batch (an undo's) vs the same unmarked`,
        ours: seconds("store.read(), one batch", samples.storeOneBatch),
        baseline: seconds("store.read(), unmarked", samples.storeResume),
        ratio: median(samples.storeOneBatch) / median(samples.storeResume),
        target: { op: "<=", value: 1.3, on: "ratio" },
        notes:
          `fresh processes, ${rounds} rounds; ` +
          `CPU time ${(cpuSeconds("storeOneBatch") / cpuSeconds("storeResume")).toFixed(2)}x`,
      },
      {
        suite: `replay ${count} events, peak RSS growth`,
        ours: { label: "store.read()", value: peak(ourRuns, "rssGrowthMB"), unit: "MB" },
        baseline: { label: "raw", value: peak(rawRuns, "rssGrowthMB"), unit: "MB" },
        ratio: undefined,
        target: { op: "<", value: MEMORY_LIMIT_MB, on: "ours" },
        notes:
          `worst of ${rounds * 2} runs each; heap +${peak(ourRuns, "heapGrowthMB").toFixed(1)} MB ` +
          `(raw +${peak(rawRuns, "heapGrowthMB").toFixed(1)} MB)`,
        details: {
          heapGrowthMB: peak(ourRuns, "heapGrowthMB"),
          externalGrowthMB: peak(ourRuns, "externalGrowthMB"),
          rawHeapGrowthMB: peak(rawRuns, "heapGrowthMB"),
          rawExternalGrowthMB: peak(rawRuns, "externalGrowthMB"),
        },
      },
    ];
  },
};

/** Writes `events` lines in the store's format straight into the log: far faster than appending. */
