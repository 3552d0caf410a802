// npm run bench [-- <suite name>…]   (BENCH_QUICK=1 for a smoke run with small sizes)
// Runs the suites in order, prints one markdown table and writes the figures to
// bench/results/latest.json (a run of only some suites, or a quick one, writes tmp-*.json instead).
import { mkdir, writeFile } from "node:fs/promises";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { appendSuite } from "./append.bench.js";
import { appendLatencySuite } from "./append-latency.bench.js";
import { batchSuite } from "./batch.bench.js";
import { bigEventSuite } from "./big-event.bench.js";
import { captureSuite } from "./capture.bench.js";
import { conflictsSuite } from "./conflicts.bench.js";
import { conversationSuite } from "./conversation.bench.js";
import { diffSuite } from "./diff.bench.js";
import { forkSuite } from "./fork.bench.js";
import { forkWorkspaceSuite } from "./fork-workspace.bench.js";
import { markdownTable, score, withTempDirs, type ScoredRow, type Suite } from "./harness.js";
import { lockSuite } from "./lock.bench.js";
import { postgresSuite } from "./postgres.bench.js";
import { replaySuite } from "./replay.bench.js";
import { rewindSuite } from "./rewind.bench.js";
import { scaleSuite } from "./scale.bench.js";
import { sessionSuite } from "./session.bench.js";
import { diskSuite, shellSuite } from "./shell.bench.js";
import { diskCyclesSuite } from "./disk-cycles.bench.js";

/** Every suite, in the order they run. A new benchmark is one more entry here. */
const suites: Suite[] = [
  appendSuite,
  appendLatencySuite,
  batchSuite,
  replaySuite,
  bigEventSuite,
  lockSuite,
  captureSuite,
  rewindSuite,
  conflictsSuite,
  conversationSuite,
  diffSuite,
  forkSuite,
  forkWorkspaceSuite,
  scaleSuite,
  shellSuite,
  sessionSuite,
  diskSuite,
  diskCyclesSuite,
  postgresSuite,
];

const here = dirname(fileURLToPath(import.meta.url));
const quick = process.env.BENCH_QUICK === "1";
const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !suites.some((s) => s.name === name));
if (unknown.length > 0)
  throw new Error(`unknown suite(s) ${unknown.join(", ")}; known: ${suites.map((s) => s.name).join(", ")}`);
const selected = wanted.length > 0 ? suites.filter((s) => wanted.includes(s.name)) : suites;

const started = performance.now();
// Other work on a shared machine moves these figures: the load is recorded with them.
const loadBefore = loadavg()[0]!;
const rows: ScoredRow[] = [];
const timings: Record<string, number> = {};
for (const suite of selected) {
  console.error(`▶ ${suite.name}${quick ? " (quick)" : ""}`);
  const suiteStarted = performance.now();
  const suiteRows = await withTempDirs(suite.name, (tempDir) =>
    suite.run({ quick, tempDir, log: (m) => console.error(m) }),
  );
  timings[suite.name] = (performance.now() - suiteStarted) / 1000;
  console.error(`  done in ${timings[suite.name]!.toFixed(1)} s`);
  rows.push(...suiteRows.map(score));
}
const totalSeconds = (performance.now() - started) / 1000;
const loadAfter = loadavg()[0]!;

const complete = selected.length === suites.length && !quick;
const command = `${quick ? "BENCH_QUICK=1 " : ""}npm run bench${wanted.length ? ` -- ${wanted.join(" ")}` : ""}`;
const table = markdownTable(rows);
console.log(
  `\n${table}\n\n\`${command}\`, ${new Date().toISOString().slice(0, 10)}, Node ${process.versions.node}, ` +
    `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${totalSeconds.toFixed(0)} s, ` +
    `load average ${loadBefore.toFixed(1)} → ${loadAfter.toFixed(1)}`,
);

const ownFile = !quick && selected.length === 1 ? selected[0]!.results : undefined;
const out = join(
  here,
  "results",
  complete ? "latest.json" : (ownFile ?? `tmp-${quick ? "quick" : selected.map((s) => s.name).join("-")}.json`),
);
await mkdir(dirname(out), { recursive: true });
const report = {
  command,
  date: new Date().toISOString(),
  quick,
  machine: {
    node: process.versions.node,
    platform: process.platform,
    arch: process.arch,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryMB: Math.round(totalmem() / 1024 / 1024),
  },
  loadAverage: { before: loadBefore, after: loadAfter },
  seconds: { total: totalSeconds, ...timings },
  rows,
  table,
};
await writeFile(out, JSON.stringify(report, null, 2) + "\n");
console.error(`figures written to ${relative(process.cwd(), out)}`);
if (rows.some((row) => row.pass === false)) process.exitCode = 1;
