import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { CheckpointStore, SessionStore, rewind, undoRewind } from "../src/index.js";
import { ShadowGit } from "./git.js";
import { interleavedRounds, median, timeIt, type Row, type Suite } from "./harness.js";
import { formatMs, medianMs, perOperation } from "./per-operation.js";
import { durableRewindFloorPaths, storeFloorPack } from "./rewind-floor.js";
import { editedText, makeWorkspace, settleDisk, sizeLabel, spreadPick } from "./workspace.js";

const run = promisify(execFile);
/** Targets: a shell command's capture 3x (unwatched) and 5x (watched) faster than shadow git's commit. */
const COMMAND_SPEEDUP = 3;
const WATCHED_SPEEDUP = 5;
const REWIND_PARITY = 1;

/**
 * A realistic session replayed: a generated project of 5k files (with a `.gitignore`d build folder) gets
 * tool edits (`around`, one file each) and shell commands (`aroundCommand`): `sed -i` over a module's 200
 * files, a folder moved, a folder removed (`rm -rf`), a generator writing 50 files, a build into the ignored
 * folder. The same steps run in a second copy watched (`watch: true`), and shadow git (`git add -A && git
 * commit`, a separate GIT_DIR) checkpoints the first copy after every step, as the peers do. Timed per
 * command: the capture alone (aroundCommand minus the command's own run) against git's checkpoint. Then the
 * session is rewound over its last commands (~800 paths) and undone, against `git restore --source <commit>
 * --staged --worktree .` there and back; each checked exact against git's commits.
 */
export const sessionSuite: Suite = {
  name: "session",
  async run({ quick, tempDir, log }) {
    const size = quick ? 1000 : 5000;
    const dir = await tempDir();
    const plain = await makeWorkspace(join(dir, "plain"), size);
    await writeFile(join(plain.root, ".gitignore"), "dist/\n");
    await cp(plain.root, join(dir, "watched"), { recursive: true });
    const { git } = await ShadowGit.create(join(dir, "shadow-git"), plain.root);
    const store = new SessionStore({ root: join(dir, "store") });
    const ours = new CheckpointStore(store, { workspaceIndex: { maxFiles: 1_000_000 } });
    const watching = new CheckpointStore(store, { workspaceIndex: { maxFiles: 1_000_000, watch: true } });
    try {
      const session = await store.create({ workspace: plain.root });
      const watchedSession = await store.create({ workspace: join(dir, "watched") });
      // The first scans (every file read and stored) are not what this measures: made before, untimed.
      await ours.afterCommand(await ours.beforeCommand(session.id, { tool: "bash" }));
      await watching.afterCommand(await watching.beforeCommand(watchedSession.id, { tool: "bash" }));

      const commands = quick ? 10 : 30;
      const editsPerCommand = 3;
      const picks = spreadPick(plain.files, commands * editsPerCommand);
      const capture: number[] = [];
      const watched: number[] = [];
      const gitCheckpoint: number[] = [];
      /** Our sequence and git's commit before each command: the rewind's targets. */
      const before: { sequence: number; commit: string }[] = [];
      for (let c = 0; c < commands; c++) {
        for (const file of picks.slice(c * editsPerCommand, (c + 1) * editsPerCommand)) {
          if (!existsSync(join(plain.root, file))) continue; // moved or removed by an earlier command
          for (const [checkpoints, id, root] of [
            [ours, session.id, plain.root],
            [watching, watchedSession.id, join(dir, "watched")],
          ] as const) {
            const path = join(root, file);
            await checkpoints.around(id, { tool: "edit_file", paths: [file] }, async () =>
              writeFile(path, editedText(await readFile(path, "utf8"), c)),
            );
          }
          await git.checkpoint();
        }
        before.push({ sequence: (await store.get(session.id))!.lastSequence, commit: await git.head() });
        const script = commandScript(c, size);
        await settleDisk(dir);
        capture.push(await captureMs(ours, session.id, plain.root, script));
        await settleDisk(dir);
        watched.push(await captureMs(watching, watchedSession.id, join(dir, "watched"), script));
        await settleDisk(dir);
        gitCheckpoint.push(await timeIt(() => git.checkpoint()));
      }
      watching.close();
      log(
        `  ${commands} commands: capture ${median(capture).toFixed(0)} ms, git ${median(gitCheckpoint).toFixed(0)} ms`,
      );
      const rewound = await rewindRounds(store, session.id, git, before, quick, dir);
      return rowsFor(size, commands, capture, watched, gitCheckpoint, rewound);
    } finally {
      watching.close();
      await store.close();
    }
  },
};

/** The c-th shell command of the session, as a bash script run in the workspace. */
function commandScript(c: number, size: number): string {
  const pkgs = Math.ceil(size / 2000);
  const mod = `packages/pkg-${c % pkgs}/src/mod-${Math.floor(c / 5) % 10}`;
  switch (c % 5) {
    case 0:
      return `find ${mod} -name '*.ts' -print0 | xargs -0 sed -i 's/let total/let sum/; s/total +=/sum +=/'`;
    case 1:
      return `[ -d ${mod} ] && mv ${mod} ${mod}-moved-${c} || true`;
    case 2:
      return `rm -rf packages/pkg-${c % pkgs}/src/mod-${(Math.floor(c / 5) + 3) % 10}/part-${c % 10}`;
    case 3:
      return (
        `mkdir -p generated/run-${c} && for i in $(seq 1 50); ` +
        `do echo "export const v$i = $i * ${c};" > generated/run-${c}/v$i.ts; done`
      );
    default:
      return `mkdir -p dist && cp -r packages/pkg-0/src/mod-${c % 10} dist/build-${c} 2>/dev/null || true`;
  }
}

/** aroundCommand's own time: its whole run minus the command's. */
async function captureMs(checkpoints: CheckpointStore, id: string, root: string, script: string): Promise<number> {
  let commandMs = 0;
  const total = await timeIt(async () => {
    await checkpoints.aroundCommand(id, { tool: "bash" }, async () => {
      commandMs = await timeIt(async () => void (await run("bash", ["-c", script], { cwd: root })));
    });
  });
  return total - commandMs;
}

interface Rewound {
  paths: number;
  ours: number[];
  undo: number[];
  git: number[];
  gitBack: number[];
  /** git restore there and back, each followed by a syncfs of the filesystem: as durable as ours. */
  gitSync: number[];
  gitSyncBack: number[];
  /** The same paths put back by a rewind's durable steps alone, done raw (rewind-floor.ts). */
  floor: number[];
}

/** Rewinds over the last commands (~800 paths) and back, against git restore there and back; checked exact. */
async function rewindRounds(
  store: SessionStore,
  id: string,
  git: ShadowGit,
  before: readonly { sequence: number; commit: string }[],
  quick: boolean,
  dir: string,
): Promise<Rewound> {
  const target = before[before.length - (quick ? 3 : 6)]!;
  const end = await git.head();
  let paths = 0;
  const undoMs: number[] = [];
  const gitBackMs: number[] = [];
  const gitSyncBackMs: number[] = [];
  const restore = (commit: string) => git.run(["restore", `--source=${commit}`, "--staged", "--worktree", "."]);
  const exact = async (commit: string, what: string) => {
    const changed = await git.treeDiffers(commit);
    if (changed !== "")
      throw new Error(
        `${what} is not exact: ${changed.split("\n").length} paths differ, e.g. ${changed.slice(0, 300)}`,
      );
  };
  const floor = await floorOf(git, target.commit, end, join(dir, "floor-session"));
  const samples = await interleavedRounds(
    quick ? 1 : 3,
    {
      ours: async () => {
        await settleDisk(dir);
        const ms = await timeIt(async () => {
          const report = await rewind(store, id, { toSequence: target.sequence, mode: "files" });
          paths = report.filesRestored + report.filesDeleted;
        });
        await exact(target.commit, "the rewind");
        await settleDisk(dir);
        undoMs.push(await timeIt(async () => void (await undoRewind(store, id))));
        await exact(end, "the undo");
        return ms;
      },
      git: async () => {
        await settleDisk(dir);
        const ms = await timeIt(async () => void (await restore(target.commit)));
        await exact(target.commit, "git restore");
        await settleDisk(dir);
        gitBackMs.push(await timeIt(async () => void (await restore(end))));
        await exact(end, "git restore back");
        return ms;
      },
      // The same, then one syncfs of the filesystem (what ours does for 16 files or more): the price of durability.
      gitSync: async () => {
        await settleDisk(dir);
        const ms = await timeIt(async () => {
          await restore(target.commit);
          await settleDisk(dir);
        });
        await exact(target.commit, "git restore + sync");
        await settleDisk(dir);
        gitSyncBackMs.push(
          await timeIt(async () => {
            await restore(end);
            await settleDisk(dir);
          }),
        );
        await exact(end, "git restore back + sync");
        return ms;
      },
      floor: async () => {
        await settleDisk(dir);
        const ms = durableRewindFloorPaths(floor.records, git.workTree, floor.paths, floor.pack);
        await exact(target.commit, "the floor");
        await restore(target.commit); // the index too, so that the restore back removes what the floor put back
        await restore(end);
        await exact(end, "git restore back after the floor");
        return ms;
      },
    },
    { warmUp: false },
  );
  return {
    paths,
    ours: samples.ours,
    undo: undoMs,
    git: samples.git,
    gitBack: gitBackMs,
    gitSync: samples.gitSync,
    gitSyncBack: gitSyncBackMs,
    floor: samples.floor,
  };
}

/**
 * What the floor puts back, read untimed from git: the paths that differ between the target and the end, those
 * there at the target restored from a pack of their bytes, the others removed.
 */
async function floorOf(git: ShadowGit, target: string, end: string, records: string) {
  const fields = (await git.run(["diff", "--name-status", "-z", "--no-renames", target, end])).split("\0");
  const restore: string[] = [];
  const remove: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) (fields[i] === "A" ? remove : restore).push(fields[i + 1]!);
  const bytes = await Promise.all(
    restore.map(async (path) => Buffer.from(await git.run(["show", `${target}:${path}`]), "utf8")),
  );
  return { paths: { restore, remove }, records, pack: storeFloorPack(records, bytes) };
}

function rowsFor(
  size: number,
  commands: number,
  capture: number[],
  watched: number[],
  git: number[],
  rewound: Rewound,
): Row[] {
  const at = `@${sizeLabel(size)} files`;
  const fig = (label: string, ms: number[]) => perOperation(label, ms);
  const f = {
    capture: fig("aroundCommand's capture", capture),
    watched: fig("aroundCommand's capture, watch: true", watched),
    git: fig("shadow git add -A + commit", git),
    ours: perOperation("paths/s, rewind (mode files, keepUndo 1)", rewound.ours, rewound.paths),
    undo: perOperation("paths/s, undoRewind", rewound.undo, rewound.paths),
    gitRewind: perOperation("paths/s, git restore --source --staged --worktree", rewound.git, rewound.paths),
    gitBack: perOperation("paths/s, git restore back", rewound.gitBack, rewound.paths),
    gitSync: perOperation("paths/s, git restore, then syncfs", rewound.gitSync, rewound.paths),
    gitSyncBack: perOperation("paths/s, git restore back, then syncfs", rewound.gitSyncBack, rewound.paths),
    floor: perOperation("paths/s, its durable steps alone, raw", rewound.floor, rewound.paths),
  };
  const mix = "sed -i over 200 files, mv of a folder, rm -rf, a 50-file generator, a build into an ignored folder";
  return [
    {
      suite: `session ${at}: a shell command's capture vs shadow git`,
      ours: f.capture,
      baseline: f.git,
      ratio: f.capture.value / f.git.value,
      target: { op: ">=", value: COMMAND_SPEEDUP, on: "ratio" },
      notes:
        `${formatMs(f.capture)} vs ${formatMs(f.git)} median over ${commands} commands (${mix}), ` +
        "3 edits each between",
    },
    {
      suite: `session ${at}: a shell command's capture, watched, vs shadow git`,
      ours: f.watched,
      baseline: f.git,
      ratio: f.watched.value / f.git.value,
      target: { op: ">=", value: WATCHED_SPEEDUP, on: "ratio" },
      notes: `${formatMs(f.watched)} vs ${formatMs(f.git)}; the same commands in a copy, watch: true`,
    },
    {
      suite: `session ${at}: rewind of ${rewound.paths} paths vs git restore --staged --worktree`,
      ours: f.ours,
      baseline: f.gitRewind,
      ratio: f.ours.value / f.gitRewind.value,
      target: { op: ">=", value: REWIND_PARITY, on: "ratio" },
      notes: `${formatMs(f.ours, rewound.paths)} vs ${formatMs(f.gitRewind, rewound.paths)}; both checked exact`,
    },
    {
      suite: `session ${at}: undo of that rewind vs git restore back`,
      ours: f.undo,
      baseline: f.gitBack,
      ratio: f.undo.value / f.gitBack.value,
      target: { op: ">=", value: REWIND_PARITY, on: "ratio" },
      notes: `${formatMs(f.undo, rewound.paths)} vs ${formatMs(f.gitBack, rewound.paths)}; both checked exact`,
    },
    {
      suite: `session ${at}: rewind of ${rewound.paths} paths vs git restore + syncfs`,
      ours: f.ours,
      baseline: f.gitSync,
      ratio: f.ours.value / f.gitSync.value,
      target: undefined,
      notes:
        `info: ${formatMs(f.ours, rewound.paths)} vs ${formatMs(f.gitSync, rewound.paths)}: git's restore made ` +
        "as durable as ours (one syncfs after it, as ours makes 16 files or more durable)",
    },
    {
      suite: `session ${at}: undo of that rewind vs git restore back + syncfs`,
      ours: f.undo,
      baseline: f.gitSyncBack,
      ratio: f.undo.value / f.gitSyncBack.value,
      target: undefined,
      notes: `info: ${formatMs(f.undo, rewound.paths)} vs ${formatMs(f.gitSyncBack, rewound.paths)}`,
    },
    {
      suite: `session ${at}: rewind of ${rewound.paths} paths vs its durable steps alone`,
      ours: f.ours,
      baseline: f.floor,
      ratio: f.ours.value / f.floor.value,
      target: undefined,
      notes:
        `info: ${formatMs(f.ours, rewound.paths)} vs ${formatMs(f.floor, rewound.paths)}; git ` +
        `${formatMs(f.gitRewind, rewound.paths)} is ${(f.floor.value / f.gitRewind.value).toFixed(2)}x the floor's ` +
        "time: the most a rewind doing only these steps reaches against git here (undo copy, intent, checked " +
        "before-bytes, temp + rename or unlink, syncfs, marker)",
      details: {
        floorMs: medianMs(f.floor, rewound.paths),
        gitOverFloor: f.floor.value / f.gitRewind.value,
      },
    },
  ];
}
