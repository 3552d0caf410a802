import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { promisify } from "node:util";
import { CheckpointStore, SessionStore, rewind, undoRewind, type RewindReport } from "../src/index.js";
import { interleavedRounds, median, timeIt, type Figure, type Row, type Suite } from "./harness.js";
import { formatMs, medianMs, perOperation } from "./per-operation.js";
import { durableRewindFloorFiles, storeFloorPack } from "./rewind-floor.js";
import {
  editedText,
  resetToInitial,
  settleDisk,
  sharedWorkspace,
  sizeLabel,
  spreadPick,
  type GitWorkspace,
  type Workspace,
} from "./workspace.js";

const FLAT_TOLERANCE = 1.5;
/** Target: a rewind of 1 file at least 20x faster than shadow git's restore; of 100 and 1000 files, not slower. */
const GIT_SPEEDUP = 20;
const GIT_PARITY = 1;
/** Target: the main thread's longest stall during a 1,000-file rewind, in milliseconds. */
const STALL_MS = 20;

/**
 * Rewind: k files edited after the target, each through its own `around` (one
 * edit_file call per file), then `rewind(store, id, { toSequence })` — with the default undo
 * snapshot (keepUndo 1) and without it (keepUndo 0) — against Gemini CLI's shadow-git restore
 * (`git restore --source=<commit> .` + `git clean -fd`) in the same workspace. Every round
 * starts from the same edited state, re-made untimed: a fresh session, k captures + edits for
 * ours; the same k edits for git; then the disk is settled (syncfs). Only the rewind itself is timed.
 * The undo of such a rewind (`undoRewind`, putting the k edits back) is timed the same way, against the
 * same git restore: what a user pays to change their mind, either way.
 */
export const rewindSuite: Suite = {
  name: "rewind",
  results: "rewind.json",
  async run({ quick, tempDir, log }) {
    const mainSize = quick ? 1000 : 10_000;
    const ks = quick ? [1, 10, 100] : [1, 100, 1000];
    const flatSizes = quick ? [300, 3000] : [1000, 50_000];
    const roundsFor = (k: number) => (quick ? 3 : k >= 1000 ? 3 : k >= 100 ? 5 : 9);

    const main = new Map<number, KFigures>();
    await withBench(await sharedWorkspace(mainSize, log), await tempDir(), async (bench) => {
      for (const k of ks) main.set(k, await bench.measure(k, roundsFor(k)));
    });
    const flat = new Map<number, KFigures>();
    for (const size of flatSizes) {
      await withBench(await sharedWorkspace(size, log), await tempDir(), async (bench) => {
        flat.set(size, await bench.measure(1, roundsFor(1)));
      });
    }
    return rowsFor(mainSize, ks, main, flatSizes, flat, roundsFor);
  },
};

/** Rates in files rewound per second: k files per round. */
interface KFigures {
  files: number;
  ours: Figure;
  oursNoUndo: Figure;
  oursUndo: Figure;
  git: Figure;
  /** git restore + clean, then `sync` of the restored files and their folders: git made as durable as ours. */
  gitSync: Figure;
  /** The same k files put back by a rewind's durable steps alone, done raw (rewind-floor.ts). */
  floor: Figure;
  /** The longest event-loop stall of each rewind (keepUndo 1), in ms: monitorEventLoopDelay at 1 ms. */
  stallMs: number[];
}

interface RewindBench {
  measure(k: number, rounds: number): Promise<KFigures>;
}

/**
 * `dir` holds the store; the workspace is shared with the capture suite, so it is first put back to its
 * first commit.
 */
async function withBench(shared: GitWorkspace, dir: string, fn: (bench: RewindBench) => Promise<void>): Promise<void> {
  await resetToInitial(shared);
  const { workspace, git, initialCommit } = shared;
  const store = new SessionStore({ root: join(dir, "store") });
  const checkpoints = new CheckpointStore(store);
  try {
    await fn({
      measure: async (k, rounds) => {
        const paths = spreadPick(workspace.files, k);
        const originals = await Promise.all(paths.map((path) => readFile(join(workspace.root, path), "utf8")));
        const edited = originals.map((text) => editedText(text, 1));
        const editAll = () => Promise.all(paths.map((path, i) => writeFile(join(workspace.root, path), edited[i]!)));
        const floorRecords = join(dir, `floor-${k}`);
        const floorPack = storeFloorPack(
          floorRecords,
          await Promise.all(paths.map((path) => readFile(join(workspace.root, path)))),
        );

        /** A fresh session whose last k events are one edit_file call per path: the state every round starts from. */
        const editedSession = async () => {
          const session = await store.create({ workspace: workspace.root });
          const target = await store.append(session.id, {
            type: "message",
            payload: { role: "user", content: "make the change" },
          });
          for (const [i, path] of paths.entries()) {
            await checkpoints.around(session.id, { tool: "edit_file", paths: [path], callId: `call-${i}` }, () =>
              writeFile(join(workspace.root, path), edited[i]!),
            );
          }
          return { id: session.id, target: target.sequence };
        };
        const stallMs: number[] = [];
        const ours = (keepUndo: number) => async () => {
          const { id, target } = await editedSession();
          await settleDisk(dir);
          let report: RewindReport | undefined;
          const delay = monitorEventLoopDelay({ resolution: 1 });
          delay.enable();
          const ms = await timeIt(async () => {
            report = await rewind(store, id, { toSequence: target, keepUndo });
          });
          delay.disable();
          if (keepUndo === 1) stallMs.push(delay.max / 1e6);
          if (report?.filesRestored !== k)
            throw new Error(`rewind restored ${report?.filesRestored} files, expected ${k}`);
          await expectOriginals(workspace, paths, originals);
          return ms;
        };

        const undo = async () => {
          const { id, target } = await editedSession();
          await rewind(store, id, { toSequence: target });
          await settleDisk(dir);
          let report: RewindReport | undefined;
          const ms = await timeIt(async () => {
            report = await undoRewind(store, id);
          });
          if (report?.filesRestored !== k)
            throw new Error(`undo restored ${report?.filesRestored} files, expected ${k}`);
          await expectOriginals(workspace, paths, edited);
          await Promise.all(paths.map((path, i) => writeFile(join(workspace.root, path), originals[i]!)));
          return ms;
        };

        const samples = await interleavedRounds(rounds, {
          ours: ours(1),
          oursNoUndo: ours(0),
          oursUndo: undo,
          git: async () => {
            await editAll();
            await settleDisk(dir);
            const ms = await timeIt(() => git.restore(initialCommit));
            await expectOriginals(workspace, paths, originals);
            return ms;
          },
          floor: async () => {
            await editAll();
            await settleDisk(dir);
            const ms = durableRewindFloorFiles(floorRecords, workspace.root, paths, floorPack);
            await expectOriginals(workspace, paths, originals);
            return ms;
          },
          gitSync: async () => {
            await editAll();
            await settleDisk(dir);
            const ms = await timeIt(async () => {
              await git.restore(initialCommit);
              await syncPaths(workspace.root, paths);
            });
            await expectOriginals(workspace, paths, originals);
            return ms;
          },
        });
        const changed = await git.changedSince(initialCommit);
        if (changed !== "")
          throw new Error(`workspace differs from the initial commit after the rounds: ${changed.slice(0, 200)}`);
        return {
          files: k,
          ours: perOperation("files/s, rewind() keepUndo 1 (default)", samples.ours, k),
          oursNoUndo: perOperation("files/s, rewind() keepUndo 0", samples.oursNoUndo, k),
          oursUndo: perOperation("files/s, undoRewind()", samples.oursUndo, k),
          git: perOperation("files/s, git restore --source + clean -fd", samples.git, k),
          gitSync: perOperation("files/s, git restore + clean, then sync of the files", samples.gitSync, k),
          floor: perOperation("files/s, its durable steps alone, raw", samples.floor, k),
          stallMs,
        };
      },
    });
  } finally {
    await store.close();
  }
}

/** `sync FILE…` (fsync of each) of the restored files and of their folders, as ours makes them durable. */
async function syncPaths(root: string, paths: readonly string[]): Promise<void> {
  const files = paths.map((path) => join(root, path));
  const folders = [...new Set(files.map((file) => dirname(file)))];
  await promisify(execFile)("sync", [...files, ...folders]);
}

async function expectOriginals(
  workspace: Workspace,
  paths: readonly string[],
  originals: readonly string[],
): Promise<void> {
  const now = await Promise.all(paths.map((path) => readFile(join(workspace.root, path), "utf8")));
  const wrong = paths.filter((_, i) => now[i] !== originals[i]);
  if (wrong.length > 0) throw new Error(`${wrong.length} file(s) not restored, e.g. ${wrong[0]}`);
}

function rowsFor(
  mainSize: number,
  ks: readonly number[],
  main: ReadonlyMap<number, KFigures>,
  flatSizes: readonly number[],
  flat: ReadonlyMap<number, KFigures>,
  roundsFor: (k: number) => number,
): Row[] {
  const rows: Row[] = [];
  for (const k of ks) {
    const f = main.get(k)!;
    const perFile = k > 1 ? `; ${((medianMs(f.ours, k) * 1000) / k).toFixed(0)} µs/file` : "";
    rows.push({
      suite: `rewind ${k} file${k > 1 ? "s" : ""} @${sizeLabel(mainSize)} files vs shadow git`,
      ours: f.ours,
      baseline: f.git,
      ratio: f.ours.value / f.git.value,
      target: { op: ">=", value: k === 1 ? GIT_SPEEDUP : GIT_PARITY, on: "ratio" },
      notes:
        `${formatMs(f.ours, k)} vs ${formatMs(f.git, k)} per rewind${perFile}; ` +
        `keepUndo 0: ${formatMs(f.oursNoUndo, k)}; ${roundsFor(k)} rounds`,
      details: {
        oursMs: medianMs(f.ours, k),
        oursNoUndoMs: medianMs(f.oursNoUndo, k),
        undoMs: medianMs(f.oursUndo, k),
        gitMs: medianMs(f.git, k),
      },
    });
  }
  for (const k of ks) {
    const f = main.get(k)!;
    rows.push({
      suite: `undo of a ${k}-file rewind @${sizeLabel(mainSize)} files vs shadow git`,
      ours: f.oursUndo,
      baseline: f.git,
      ratio: f.oursUndo.value / f.git.value,
      target: { op: ">=", value: k === 1 ? GIT_SPEEDUP : GIT_PARITY, on: "ratio" },
      notes:
        `${formatMs(f.oursUndo, k)} vs ${formatMs(f.git, k)} (git restore of the same edit); ` +
        `${roundsFor(k)} rounds`,
    });
  }
  for (const k of ks) {
    const f = main.get(k)!;
    rows.push({
      suite: `rewind ${k} file${k > 1 ? "s" : ""} @${sizeLabel(mainSize)} files vs shadow git + sync`,
      ours: f.ours,
      baseline: f.gitSync,
      ratio: f.ours.value / f.gitSync.value,
      target: undefined,
      notes:
        `${formatMs(f.ours, k)} vs ${formatMs(f.gitSync, k)}: git restore + clean -fd, then \`sync\` of the ` +
        `restored files and their folders (durable as ours); undo ${formatMs(f.oursUndo, k)}`,
    });
  }
  for (const k of ks) {
    const f = main.get(k)!;
    rows.push({
      suite: `rewind ${k} file${k > 1 ? "s" : ""} @${sizeLabel(mainSize)} files vs its durable steps alone`,
      ours: f.ours,
      baseline: f.floor,
      ratio: f.ours.value / f.floor.value,
      target: undefined,
      notes:
        `info: ${formatMs(f.ours, k)} vs ${formatMs(f.floor, k)}; git ${formatMs(f.git, k)} is ` +
        `${(f.floor.value / f.git.value).toFixed(2)}x the floor's time: the most a rewind doing only these steps ` +
        `reaches against git here (undo copy, intent, checked before-bytes, temp + rename, fsync or syncfs, marker)`,
      details: { floorMs: medianMs(f.floor, k), gitOverFloor: f.floor.value / f.git.value },
    });
  }
  const largestK = ks[ks.length - 1]!;
  const stalls = main.get(largestK)!.stallMs;
  rows.push({
    suite: `rewind ${largestK} files @${sizeLabel(mainSize)}: the main thread's longest stall`,
    ours: {
      label: "max event-loop delay per rewind (median of rounds)",
      value: median(stalls),
      unit: "ms",
      samples: stalls,
    },
    baseline: undefined,
    ratio: undefined,
    target: { op: "<=", value: STALL_MS, on: "ours" },
    notes:
      `perf_hooks.monitorEventLoopDelay (1 ms resolution) over each rewind (keepUndo 1); ` +
      `worst round ${Math.max(...stalls).toFixed(1)} ms; ${stalls.length} rounds`,
  });
  const [smallest, largest] = [flatSizes[0]!, flatSizes[flatSizes.length - 1]!];
  const small = flat.get(smallest)!;
  const large = flat.get(largest)!;
  const slowdown = medianMs(large.ours) / medianMs(small.ours);
  const gitSlowdown = medianMs(large.git) / medianMs(small.git);
  rows.push({
    suite: `rewind 1 file flat in workspace size: @${sizeLabel(largest)} vs @${sizeLabel(smallest)}`,
    ours: { ...large.ours, label: `rewind() @${sizeLabel(largest)}` },
    baseline: { ...small.ours, label: `rewind() @${sizeLabel(smallest)}` },
    ratio: large.ours.value / small.ours.value,
    target: { op: ">=", value: Math.round(100 / FLAT_TOLERANCE) / 100, on: "ratio" },
    notes:
      `time ${sizeLabel(largest)}/${sizeLabel(smallest)} = ${slowdown.toFixed(2)} (flat: <= ${FLAT_TOLERANCE}); ` +
      `${formatMs(small.ours)} -> ${formatMs(large.ours)}; ` +
      `shadow git ${formatMs(small.git)} -> ${formatMs(large.git)} (${gitSlowdown.toFixed(1)}x)`,
    details: {
      slowdown,
      gitSlowdown,
      smallMs: medianMs(small.ours),
      largeMs: medianMs(large.ours),
      smallGitMs: medianMs(small.git),
      largeGitMs: medianMs(large.git),
    },
  });
  return rows;
}
