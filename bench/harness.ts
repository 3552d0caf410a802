import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

/** One benchmark: a name and a function producing table rows. `bench/run.ts` runs them in order. */
export interface Suite {
  name: string;
  /**
   * The results file a run of this suite alone (not quick) writes, for a table of its own in docs/benchmarks.md;
   * without it such a run writes tmp-<name>.json (not kept).
   */
  results?: string;
  run(context: SuiteContext): Promise<Row[]>;
}

export interface SuiteContext {
  /** BENCH_QUICK=1: smaller sizes and fewer rounds, for a smoke run. */
  quick: boolean;
  /** A fresh folder under the OS temp dir, removed when the suite ends. */
  tempDir(): Promise<string>;
  log(message: string): void;
}

/** A measured figure. `unit` tells which way is better: events/s up, seconds and MB down. */
export interface Figure {
  /** What was measured, e.g. "SessionStore fsync" or "raw fd write+fdatasync (sync)". */
  label: string;
  value: number;
  unit: "events/s" | "s" | "ms" | "MB";
  /** Every round's figure, for the JSON file: the median hides the spread. */
  samples?: number[];
}

export interface Target {
  /** Compared with `ratio` (or with `ours.value` when `on` is "ours"). */
  op: ">=" | "<=" | "<";
  value: number;
  on: "ratio" | "ours";
}

export interface Row {
  suite: string;
  ours: Figure;
  baseline: Figure | undefined;
  /** ours / baseline, for throughputs and times alike. */
  ratio: number | undefined;
  /** Undefined for a figure reported to decide something rather than to pass. */
  target: Target | undefined;
  notes?: string;
  /** Extra figures for the JSON file (e.g. the lock overhead in percent). */
  details?: Record<string, number>;
}

export interface ScoredRow extends Row {
  pass: boolean | undefined;
}

export function score(row: Row): ScoredRow {
  if (!row.target) return { ...row, pass: undefined };
  const actual = row.target.on === "ratio" ? row.ratio : row.ours.value;
  if (actual === undefined) return { ...row, pass: false };
  const { op, value } = row.target;
  const pass = op === ">=" ? actual >= value : op === "<=" ? actual <= value : actual < value;
  return { ...row, pass };
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error("median of nothing");
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Milliseconds `fn` takes. */
export async function timeIt(fn: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/**
 * Runs each contender once per round, alternating which goes first (or, with `rotate`, each in turn), after one
 * discarded warm-up round (unless `warmUp: false`). Interleaving matters on a shared 2-core VM: disk and CPU speed
 * drift over seconds, and running all of A then all of B would charge that drift to one side.
 * Each contender returns the milliseconds of its timed part (setup stays outside the timing).
 */
export async function interleavedRounds<K extends string>(
  rounds: number,
  contenders: Record<K, () => Promise<number>>,
  options: { warmUp?: boolean; rotate?: boolean } = {},
): Promise<Record<K, number[]>> {
  const names = Object.keys(contenders) as K[];
  const samples = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<K, number[]>;
  for (let round = options.warmUp === false ? 0 : -1; round < rounds; round++) {
    const order = options.rotate ? rotated(names, round) : round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const ms = await contenders[name]();
      if (round >= 0) samples[name].push(ms);
    }
  }
  return samples;
}

/**
 * The names started at `round` (mod their count): each contender's turn follows another's, every round alike. Where
 * a turn's first call pays for the pause before it (a PostgreSQL block's first append, 0.1-0.4 ms more:
 * docs/postgres.md), alternating the order does not share that out: the two at its ends follow themselves every
 * other round, those between never.
 */
function rotated<K>(names: readonly K[], round: number): K[] {
  const start = ((round % names.length) + names.length) % names.length;
  return [...names.slice(start), ...names.slice(0, start)];
}

/** events/s of each round, and their median. */
export function throughput(label: string, events: number, msPerRound: readonly number[]): Figure {
  const samples = msPerRound.map((ms) => events / (ms / 1000));
  return { label, value: median(samples), unit: "events/s", samples };
}

export function seconds(label: string, msPerRound: readonly number[]): Figure {
  const samples = msPerRound.map((ms) => ms / 1000);
  return { label, value: median(samples), unit: "s", samples };
}

/** Collects garbage if the process runs with --expose-gc (npm run bench does), so memory baselines are clean. */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/**
 * Writes back everything dirty on the filesystem holding `path` (syncfs, via `sync -f`), untimed,
 * before a timed part: ext4 commits one journal for the whole filesystem, so without this a
 * contender's fsyncs would pay for the writeback of another's (or the setup's) data.
 */
export async function settleDisk(path: string): Promise<void> {
  await promisify(execFile)("sync", ["-f", path]);
}

export async function withTempDirs<T>(prefix: string, fn: (tempDir: () => Promise<string>) => Promise<T>): Promise<T> {
  const made: string[] = [];
  const tempDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), `agent-tape-bench-${prefix}-`));
    made.push(dir);
    return dir;
  };
  try {
    return await fn(tempDir);
  } finally {
    // Retried: a git a suite ran may still be writing below (a detached auto-gc), and a failed cleanup
    // must not hide the suite's own error.
    await Promise.all(
      made.map((dir) => rm(dir, { recursive: true, force: true, maxRetries: 5 }).catch(() => undefined)),
    );
  }
}

// ---- output ----------------------------------------------------------------------------------

export function formatFigure(figure: Figure | undefined): string {
  if (!figure) return "—";
  switch (figure.unit) {
    case "events/s":
      return `${Math.round(figure.value).toLocaleString("en-US")} ev/s`;
    case "s":
      return `${figure.value.toFixed(2)} s`;
    case "ms":
      return `${figure.value.toFixed(1)} ms`;
    case "MB":
      return `${figure.value.toFixed(1)} MB`;
  }
}

function formatTarget(target: Target | undefined, unit: Figure["unit"]): string {
  if (!target) return "—";
  return target.on === "ratio" ? `${target.op} ${target.value}x` : `${target.op} ${target.value} ${unit}`;
}

/** The results as a markdown table (suite, ours, baseline, ratio, target, result, notes). */
export function markdownTable(rows: readonly ScoredRow[]): string {
  const header = ["suite", "ours", "baseline", "ratio", "target", "result", "notes"];
  const lines = rows.map((row) => [
    row.suite,
    `${formatFigure(row.ours)} (${row.ours.label})`,
    row.baseline ? `${formatFigure(row.baseline)} (${row.baseline.label})` : "—",
    row.ratio === undefined ? "—" : `${row.ratio.toFixed(2)}x`,
    formatTarget(row.target, row.ours.unit),
    row.pass === undefined ? "info" : row.pass ? "pass" : "**FAIL**",
    row.notes ?? "",
  ]);
  const all = [header, ...lines];
  const widths = header.map((_, col) => Math.max(...all.map((cells) => cells[col]!.length)));
  const render = (cells: string[]) => `| ${cells.map((c, col) => c.padEnd(widths[col]!)).join(" | ")} |`;
  return [render(header), `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`, ...lines.map(render)].join("\n");
}
