import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { CheckpointStore, SessionStore, rewind, type StoredEvent } from "../src/index.js";
import { LastWritten, settleConflicts } from "../src/rewind/conflicts.js";
import { closestSnapshotPerPath, planFileChanges } from "../src/rewind/plan.js";
import { UNDO_LIMITS } from "../src/rewind/rewind.js";
import { interleavedRounds, median, settleDisk, timeIt, type Figure, type Row, type Suite } from "./harness.js";
import { editedText, sourceText } from "./workspace.js";

/**
 * The conflict check (docs/ARCHITECTURE.md, "Conflicts"): a rewind of k files, each edited by its
 * own `around` call (a checkpoint and an after-state per file, 2k events). Three figures:
 * - the check alone (fold the tape into LastWritten, compare every planned path: what `rewind` adds to its
 *   plan) against the restore alone (the rewind's "intent-written" -> "files-restored" step), same round;
 * - the whole rewind of a session with after-states against one recorded without them (nothing to check);
 * - what recording the after-state costs one `around` call of one file.
 */
export const conflictsSuite: Suite = {
  name: "conflicts",
  async run({ quick, tempDir, log }) {
    const k = quick ? 100 : 1000;
    const rounds = quick ? 3 : 5;
    const dir = await tempDir();
    const workspace = await realpath(await mkdirp(join(dir, "ws")));
    const paths = Array.from({ length: k }, (_, i) => `src/dir-${i % 20}/file-${i}.ts`);
    const originals = paths.map((_, i) => sourceText(i, 2000));
    const edited = originals.map((text) => editedText(text, 1));
    for (const [i, path] of paths.entries()) {
      await mkdir(dirname(join(workspace, path)), { recursive: true });
      await writeFile(join(workspace, path), originals[i]!);
    }
    const store = new SessionStore({ root: join(dir, "store") });
    const withStates = new CheckpointStore(store);
    const withoutStates = new CheckpointStore(store, { afterState: false });
    log(`  ${k} files, ${rounds} rounds`);

    /** A fresh session whose last 2k (or k) events edit every path, one `around` call each. */
    const editedSession = async (checkpoints: CheckpointStore) => {
      const { id } = await store.create({ workspace });
      const target = await store.append(id, { type: "message", payload: { role: "user", content: "edit all" } });
      for (const [i, path] of paths.entries())
        await checkpoints.around(id, { tool: "edit_file", paths: [path], callId: `c${i}` }, () =>
          writeFile(join(workspace, path), edited[i]!),
        );
      return { id, target: target.sequence };
    };

    const checkMs: number[] = [];
    const restoreMs: number[] = [];
    /** Times the rewind; for a session with after-states, also the check alone and the restore step. */
    const rewound = (checkpoints: CheckpointStore, measureCheck: boolean) => async () => {
      const { id, target } = await editedSession(checkpoints);
      if (measureCheck) checkMs.push(await timeCheck(store, id, target, workspace, k));
      await settleDisk(dir);
      const steps = new Map<string, number>();
      const ms = await timeIt(async () => {
        const report = await rewind(store, id, {
          toSequence: target,
          onProgress: (step) => steps.set(step, performance.now()),
        });
        if (report.filesRestored !== k || report.conflicts)
          throw new Error(`rewind restored ${report.filesRestored} of ${k} files, conflicts ${report.conflicts}`);
      });
      if (measureCheck) restoreMs.push(steps.get("files-restored")! - steps.get("intent-written")!);
      await expectOriginals(workspace, paths, originals);
      return ms;
    };
    const whole = await interleavedRounds(rounds, {
      checked: rewound(withStates, true),
      unchecked: rewound(withoutStates, false),
    });
    // interleavedRounds runs one warm-up round: its figures are dropped here as there.
    checkMs.splice(0, checkMs.length - rounds);
    restoreMs.splice(0, restoreMs.length - rounds);

    const calls = quick ? 50 : 300;
    const perCall = await interleavedRounds(rounds, {
      withAfter: () => aroundCalls(store, withStates, workspace, calls, dir),
      without: () => aroundCalls(store, withoutStates, workspace, calls, dir),
    });
    await store.close();

    const ms = (label: string, samples: number[]): Figure => ({ label, value: median(samples), unit: "ms", samples });
    const check = ms(`conflict check, ${k} files (fold + compare)`, checkMs);
    const restore = ms(`restore step of the same rewind`, restoreMs);
    const on = ms(`rewind ${k} files, after-states recorded`, whole.checked);
    const off = ms(`the same, recorded without after-states`, whole.unchecked);
    const after = ms(`around() ×${calls}, after-state on`, perCall.withAfter);
    const before = ms(`around() ×${calls}, afterState: false`, perCall.without);
    const perCallCost = (after.value - before.value) / calls;
    return [
      {
        suite: `conflict check of a ${k}-file rewind vs its restore`,
        ours: check,
        baseline: restore,
        ratio: check.value / restore.value,
        target: { op: "<", value: 1, on: "ratio" },
        notes:
          `${check.value.toFixed(1)} ms vs ${restore.value.toFixed(1)} ms; ` +
          `${2 * k} events folded; ${rounds} rounds`,
      },
      {
        suite: `rewind ${k} files: checked vs recorded without after-states`,
        ours: on,
        baseline: off,
        ratio: on.value / off.value,
        target: undefined,
        notes: `${on.value.toFixed(0)} ms vs ${off.value.toFixed(0)} ms (the tape holds ${k} more events to read)`,
      },
      {
        suite: "after-state per around() call of 1 file",
        ours: after,
        baseline: before,
        ratio: after.value / before.value,
        target: undefined,
        notes: `+${perCallCost.toFixed(3)} ms a call (one read + hash, one more fsynced append)`,
        details: { perCallMs: perCallCost },
      },
    ] satisfies Row[];
  },
};

/**
 * What the check adds to a rewind's plan, measured apart: the plan is made untimed, then the tape (already
 * read, as the rewind reads it anyway) is folded into LastWritten and every planned path compared.
 */
async function timeCheck(store: SessionStore, id: string, target: number, workspace: string, k: number) {
  const events: StoredEvent[] = [];
  for await (const event of store.backend.readEvents(id, { fromSequence: 1 })) events.push(event);
  const after = events.filter((e) => e.sequence > target);
  const plan = await planFileChanges(
    store.backend,
    id,
    workspace,
    workspace,
    await closestSnapshotPerPath(after),
    UNDO_LIMITS,
  );
  let compared = 0;
  const ms = await timeIt(async () => {
    const written = new LastWritten();
    for (const event of events) written.add(event);
    const states = written.in(workspace);
    const conflicts = settleConflicts(id, plan, states, "refuse", false);
    if (conflicts.length > 0) throw new Error(`unexpected conflicts: ${conflicts.length}`);
    compared = plan.current.files.filter((f) => states.get(f.path)).length;
  });
  // A check that compared nothing would be timed for nothing.
  if (compared !== k) throw new Error(`the check compared ${compared} of ${k} paths`);
  return ms;
}

/** `calls` around() calls of one file each in a fresh session: the ms they take together. */
async function aroundCalls(
  store: SessionStore,
  checkpoints: CheckpointStore,
  workspace: string,
  calls: number,
  dir: string,
): Promise<number> {
  const { id } = await store.create({ workspace });
  await settleDisk(dir);
  const path = "src/dir-0/file-0.ts";
  return timeIt(async () => {
    for (let i = 0; i < calls; i++)
      await checkpoints.around(id, { tool: "edit_file", paths: [path] }, () =>
        writeFile(join(workspace, path), `version ${i % 2}\n`),
      );
  });
}

async function expectOriginals(workspace: string, paths: readonly string[], originals: readonly string[]) {
  const now = await Promise.all(paths.map((path) => readFile(join(workspace, path), "utf8")));
  const wrong = paths.filter((_, i) => now[i] !== originals[i]);
  if (wrong.length > 0) throw new Error(`${wrong.length} file(s) not restored, e.g. ${wrong[0]}`);
}

async function mkdirp(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  return path;
}
