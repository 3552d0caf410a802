import { execFile } from "node:child_process";
import { cp, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { SessionStore, rewind } from "../src/index.js";
import { interleavedRounds, median, seconds, settleDisk, timeIt, type Row, type Suite } from "./harness.js";
import type { ListRun } from "./list.child.js";
import type { ReadRun } from "./read.child.js";
import type { RewindRun } from "./rewind.child.js";
import { writeLog } from "./workload.js";

const here = dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);

/**
 * Costs that must follow the work, not the size of the store:
 * - `list()` of 100 and of 5,000 sessions in a process limited to 256 open files: none unreadable,
 *   and the cost per session flat (within 1.5x);
 * - a rewind cutting the last 10 events (conversation only) of a 1M-event tape against the same cut
 *   of a 1k-event tape: within 3x;
 * - a rewind cutting 999,999 of 1M events, in a child process of its own: peak RSS under 256 MB, with the
 *   default keepUndo 1 and with 0; the undo of the first, putting the 999,999 back, under 256 MB too;
 * - a whole read of that session after the undo (its 999,999 events now one batch) against the same read
 *   before the rewind (none marked), peak RSS each in a child process of its own: within 1.5x.
 */
export const scaleSuite: Suite = {
  name: "scale",
  async run({ quick, tempDir, log }) {
    const rows: Row[] = [];
    rows.push(await listRow(quick, tempDir, log));
    rows.push(await rewindRow(quick, tempDir, log));
    rows.push(...(await bigCutRows(quick, tempDir, log)));
    return rows;
  },
};

async function listRow(quick: boolean, tempDir: () => Promise<string>, log: (m: string) => void): Promise<Row> {
  const sizes = quick ? [100, 1000] : [100, 5000];
  const runs: ListRun[][] = [];
  for (const count of sizes) {
    const root = await tempDir();
    await copiesOfOneSession(root, count);
    log(`  list of ${count} sessions under ulimit -n 256`);
    const rounds: ListRun[] = [];
    for (let round = 0; round < 3; round++) {
      const { stdout } = await run(
        "bash",
        [
          "-c",
          'ulimit -n 256 && exec "$0" --import tsx "$1" "$2"',
          process.execPath,
          join(here, "list.child.ts"),
          root,
        ],
        { cwd: dirname(here), maxBuffer: 1 << 20 },
      );
      rounds.push(JSON.parse(stdout.trim().split("\n").pop()!) as ListRun);
    }
    runs.push(rounds);
  }
  const perSession = (i: number) => runs[i]!.map((r) => r.ms / sizes[i]!);
  const small = median(perSession(0));
  const large = median(perSession(1));
  const unreadable = runs.flat().reduce((sum, r) => sum + r.unreadable, 0);
  if (unreadable > 0) throw new Error(`list() came back with ${unreadable} unreadable sessions under ulimit -n 256`);
  return {
    suite: `list(): cost per session, ${sizes[1]} vs ${sizes[0]} sessions, ulimit -n 256`,
    ours: { label: `${sizes[1]} sessions`, value: large / 1000, unit: "s", samples: perSession(1) },
    baseline: { label: `${sizes[0]} sessions`, value: small / 1000, unit: "s", samples: perSession(0) },
    ratio: large / small,
    target: { op: "<=", value: 1.5, on: "ratio" },
    notes: `per session: ${large.toFixed(3)} ms vs ${small.toFixed(3)} ms; none unreadable; 3 rounds each`,
  };
}

/** `count` sessions, each a copy of one small session with its own id (creating them through the store fsyncs each). */
async function copiesOfOneSession(root: string, count: number): Promise<void> {
  const store = new SessionStore({ root, durability: "none" });
  const template = await store.create({ title: "t" });
  await store.append(template.id, { type: "message", payload: { role: "user", content: "hi" } });
  await store.close();
  const record = await readFile(join(root, template.id, "session.json"), "utf8");
  for (let i = 1; i < count; i++) {
    const id = `s${String(i).padStart(5, "0")}`;
    await cp(join(root, template.id), join(root, id), { recursive: true });
    await writeFile(join(root, id, "session.json"), record.replace(template.id, id));
  }
}

async function rewindRow(quick: boolean, tempDir: () => Promise<string>, log: (m: string) => void): Promise<Row> {
  const sizes = quick ? [1_000, 100_000] : [1_000, 1_000_000];
  const cut = 10;
  const samples: Record<string, number[]> = {};
  // One session per size, grown back by `cut` events after each rewind so every round cuts the same.
  const sessions: { store: SessionStore; id: string; events: number; root: string }[] = [];
  for (const events of sizes) {
    const root = await tempDir();
    const store = new SessionStore({ root, durability: "none" });
    const { id } = await store.create({ title: "rewind scale" });
    await store.close();
    await writeLog(join(root, id, "events.jsonl"), id, events);
    sessions.push({ store: new SessionStore({ root, durability: "none" }), id, events, root });
    log(`  rewind cutting ${cut} of ${events} events`);
  }
  try {
    const rounds = quick ? 2 : 3;
    const timed = await interleavedRounds(
      rounds,
      Object.fromEntries(
        sessions.map((s) => [
          `e${s.events}`,
          async () => {
            const { lastSequence } = (await s.store.get(s.id))!;
            await settleDisk(s.root); // the log as an agent's fsynced appends leave it: on disk, not dirty
            const ms = await timeIt(async () => {
              await rewind(s.store, s.id, { toSequence: lastSequence - cut, mode: "conversation", keepUndo: 0 });
            });
            await s.store.appendMany(
              s.id,
              Array.from({ length: cut }, (_, i) => ({
                type: "message" as const,
                payload: { role: "user" as const, content: `again ${i}` },
              })),
            );
            return ms;
          },
        ]),
      ),
      { warmUp: false },
    );
    Object.assign(samples, timed);
  } finally {
    for (const s of sessions) await s.store.close();
  }
  const [small, large] = sizes.map((n) => samples[`e${n}`]!);
  const ours = seconds(`rewind cutting ${cut} of ${sizes[1]} events`, large!);
  const baseline = seconds(`cutting ${cut} of ${sizes[0]} events`, small!);
  return {
    suite: `rewind: cut ${cut} events of ${sizes[1]!.toLocaleString("en")} vs of ${sizes[0]!.toLocaleString("en")}`,
    ours,
    baseline,
    ratio: ours.value / baseline.value,
    target: { op: "<=", value: 3, on: "ratio" },
    notes: "conversation mode, keepUndo 0",
  };
}

const PEAK_RSS_LIMIT_MB = 256;

/**
 * A rewind that cuts all but the first event of a long tape (conversation), in a child process of its own
 * (bench/rewind.child.ts): its peak memory must not follow the cut (under 256 MB at 1M events), with the
 * default keepUndo 1 (the cut part copied as bytes into its archive) and with keepUndo 0; then the undo of
 * the keepUndo 1 rewind, which streams the 999,999 events back from that copy.
 */
async function bigCutRows(quick: boolean, tempDir: () => Promise<string>, log: (m: string) => void): Promise<Row[]> {
  const events = quick ? 100_000 : 1_000_000;
  const rows: Row[] = [];
  for (const keepUndo of [1, 0]) {
    const root = await tempDir();
    const store = new SessionStore({ root, durability: "none" });
    const { id } = await store.create({ title: "rewind big cut" });
    await store.close();
    await writeLog(join(root, id, "events.jsonl"), id, events);
    const readBefore: ReadRun[] = [];
    if (keepUndo === 1) {
      log(`  whole read of the ${events} events before the rewind, in a child process (2 rounds)`);
      for (let round = 0; round < 2; round++) readBefore.push(await readInChild(root, id, events));
    }
    log(`  rewind cutting ${events - 1} of ${events} events, keepUndo ${keepUndo}, in a child process`);
    const cut = await inChild(root, id, String(keepUndo));
    if (cut.eventsRemoved !== events - 1) throw new Error(`the rewind cut ${cut.eventsRemoved} events`);
    const what = `cut ${(events - 1).toLocaleString("en")} of ${events.toLocaleString("en")} events`;
    rows.push(
      rssRow(`rewind: ${what}, keepUndo ${keepUndo}, peak RSS`, `rewind() in a child, keepUndo ${keepUndo}`, cut),
    );
    if (keepUndo === 0) continue;
    log(`  undo of that rewind: ${events - 1} events put back, in a child process`);
    const undo = await inChild(root, id, "undo");
    if (undo.eventsRemoved !== events - 1) throw new Error(`the undo put back ${undo.eventsRemoved} events`);
    rows.push(rssRow(`undoRewind: ${what} put back, peak RSS`, "undoRewind() in a child", undo));
    // The undo put the 999,999 back as one batch (with the rewind's marker and its own): a reader must not hold it.
    log(`  whole read of the session after the undo, in a child process (2 rounds)`);
    const readAfter: ReadRun[] = [];
    for (let round = 0; round < 2; round++) readAfter.push(await readInChild(root, id, events + 2));
    rows.push(readRow(events, readBefore, readAfter));
  }
  return rows;
}

async function readInChild(root: string, id: string, expected: number): Promise<ReadRun> {
  const { stdout } = await run(process.execPath, ["--import", "tsx", join(here, "read.child.ts"), root, id], {
    cwd: dirname(here),
    maxBuffer: 1 << 20,
  });
  const result = JSON.parse(stdout.trim().split("\n").pop()!) as ReadRun;
  if (result.events !== expected) throw new Error(`the read gave ${result.events} events, not ${expected}`);
  return result;
}

/** Peak RSS of a whole read after the undo (one 999,999-event batch) against before the rewind (no batch). */
function readRow(events: number, before: ReadRun[], after: ReadRun[]): Row {
  const peak = (runs: ReadRun[]) => Math.min(...runs.map((r) => r.peakRssMB));
  const ms = (runs: ReadRun[]) => median(runs.map((r) => r.ms));
  const n = (events - 1).toLocaleString("en");
  return {
    suite: `read after undoing a ${n}-event cut (one batch) vs before the cut, peak RSS`,
    ours: { label: "read after the undo", value: peak(after), unit: "MB", samples: after.map((r) => r.peakRssMB) },
    baseline: {
      label: "read before the rewind",
      value: peak(before),
      unit: "MB",
      samples: before.map((r) => r.peakRssMB),
    },
    ratio: peak(after) / peak(before),
    target: { op: "<=", value: 1.5, on: "ratio" },
    notes:
      `store.read() of the whole session in a child, 2 rounds each, lower peak; ` +
      `${(ms(after) / 1000).toFixed(1)} s after vs ${(ms(before) / 1000).toFixed(1)} s before (median)`,
    details: { msBefore: ms(before), msAfter: ms(after) },
  };
}

async function inChild(root: string, id: string, keepUndoOrUndo: string): Promise<RewindRun> {
  const { stdout } = await run(
    process.execPath,
    ["--import", "tsx", join(here, "rewind.child.ts"), root, id, "1", keepUndoOrUndo],
    { cwd: dirname(here), maxBuffer: 1 << 20 },
  );
  return JSON.parse(stdout.trim().split("\n").pop()!) as RewindRun;
}

function rssRow(suite: string, label: string, result: RewindRun): Row {
  return {
    suite,
    ours: { label, value: result.peakRssMB, unit: "MB" },
    baseline: undefined,
    ratio: undefined,
    target: { op: "<", value: PEAK_RSS_LIMIT_MB, on: "ours" },
    notes:
      `${(result.ms / 1000).toFixed(1)} s; RSS ${result.rssBeforeMB.toFixed(0)} MB before, ` +
      `peak ${result.peakRssMB.toFixed(0)} MB; conversation mode`,
    details: { ms: result.ms, rssBeforeMB: result.rssBeforeMB, peakRssMB: result.peakRssMB },
  };
}
