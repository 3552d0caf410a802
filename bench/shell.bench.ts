import { execFile } from "node:child_process";
import { lstatSync, readdirSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { CheckpointStore, SessionStore, rewind } from "../src/index.js";
import { fsBackend } from "../src/backend/index.js";
import { loadIndex } from "../src/checkpoint/workspace-index/index-record.js";
import { ShadowGit } from "./git.js";
import { durableRewindFloor } from "./rewind-floor.js";
import { collectGarbage, interleavedRounds, median, timeIt, type Figure, type Row, type Suite } from "./harness.js";
import { formatMs, medianMs, perOperation } from "./per-operation.js";
import {
  editedText,
  hotFileText,
  makeWorkspace,
  resetToInitial,
  settleDisk,
  sharedWorkspace,
  sizeLabel,
  spreadPick,
  type GitWorkspace,
} from "./workspace.js";

const GIT_SPEEDUP = 3;
const COLD_SPEEDUP = 1;
/** Runs of the first scan and of `git add -A` into a fresh repository, per size. */
const COLD_SAMPLES = 3;
const REWIND_SPEEDUP = 5;
const MEMORY_MB = 50;
const run = promisify(execFile);

/**
 * Shell commands: what the workspace index costs around a command that changes one
 * file — before-scan, the command, after-scan, checkpoint — against the peers' shadow git, which
 * commits the whole tree (`git add -A && git commit`, a separate GIT_DIR) once per command. Both
 * make the same 4 KB edit of the hot file; rounds alternate. Also: the first (cold) scan against
 * shadow git's first commit, a rewind of a 1-file command against `git restore` + `git clean` and
 * against its durable steps done raw (rewind-floor.ts), two bare stat walks (what any stat-based scan
 * must pay), and the memory of a 50k-file index. The disk after 100 commands is the "disk" suite below.
 */
export const shellSuite: Suite = {
  name: "shell",
  async run({ quick, tempDir, log }) {
    const sizes = quick ? [1000, 3000] : [10_000, 50_000];
    const rounds = quick ? 3 : 7;
    const perSize = new Map<number, SizeFigures>();
    for (const size of sizes) {
      const shared = await sharedWorkspace(size, log);
      perSize.set(size, await measureSize(shared, await tempDir(), rounds, log));
      await resetToInitial(shared);
    }
    return rowsFor(sizes, perSize, rounds);
  },
};

/**
 * Disk: the session folder after 100 commands each changing 5 files of a 10k-file source
 * workspace, against shadow git's .git for the same history; blobs compressed (the default) and not.
 */
export const diskSuite: Suite = {
  name: "disk",
  async run({ quick, tempDir, log }) {
    const size = quick ? 1000 : 10_000;
    const commands = quick ? 10 : 100;
    const disk = await measureDisk(await tempDir(), size, commands, log);
    const suite = `disk after ${disk.commands} commands x 5 files @${sizeLabel(disk.size)} vs shadow git's .git`;
    const git = { label: "shadow .git (du)", value: disk.gitMb, unit: "MB" as const };
    return [
      {
        suite,
        ours: { label: "session folder (du), blobs compressed", value: disk.oursMb, unit: "MB" },
        baseline: git,
        ratio: disk.oursMb / disk.gitMb,
        target: { op: "<=", value: 1, on: "ratio" },
        notes:
          `deflate-raw blobs; uncompressed ${disk.rawMb.toFixed(1)} MB; apparent size (du --apparent-size): ` +
          `ours ${disk.apparent.ours.toFixed(1)} MB, uncompressed ${disk.apparent.raw.toFixed(1)} MB, ` +
          `git ${disk.apparent.git.toFixed(1)} MB (files under 4 KB take a whole block either way)`,
      },
      {
        suite: `${suite}, blobs uncompressed`,
        ours: { label: "session folder (du), compressBlobs: false", value: disk.rawMb, unit: "MB" },
        baseline: git,
        ratio: disk.rawMb / disk.gitMb,
        target: undefined,
        notes: "the same history written as before compression: one raw file per blob",
      },
    ];
  },
};

interface SizeFigures {
  command: Figure;
  git: Figure;
  walks: Figure;
  coldMs: number;
  /** The first beforeCommand alone: the first scan, reading and storing every file. */
  coldScanMs: number;
  gitColdMs: number;
  /** `git init` + `git add -A` of the tree into a fresh repository (no commit). */
  gitAddMs: number;
  /** The first scans (first beforeCommand) of COLD_SAMPLES sessions, and as many `git add -A` into new repositories. */
  firstScans: number[];
  gitAdds: number[];
  scan: Figure;
  gitStatus: Figure;
  rewind: Figure;
  gitRewind: Figure;
  rewindFloor: Figure;
  indexMb: number;
  watched: Figure;
  coldWatchedMs: number;
}

async function measureSize(shared: GitWorkspace, dir: string, rounds: number, log: (m: string) => void) {
  const { workspace, git } = shared;
  const store = new SessionStore({ root: join(dir, "store") });
  try {
    const checkpoints = new CheckpointStore(store, { workspaceIndex: { maxFiles: 1_000_000 } });
    const session = await store.create({ workspace: workspace.root });
    const hot = join(workspace.root, workspace.hotFile);
    let version = 0;
    const edit = () => writeFile(hot, hotFileText(++version));

    // Cold: the session's first scan reads and stores every file; shadow git's first commit, in a new GIT_DIR.
    await settleDisk(dir);
    let coldScanMs = 0;
    const coldMs = await timeIt(async () => {
      const started = performance.now();
      const first = await checkpoints.beforeCommand(session.id, { tool: "bash" });
      coldScanMs = performance.now() - started;
      await checkpoints.afterCommand(first);
    });
    await settleDisk(dir);
    const gitColdMs = await timeIt(() => firstCommit(join(dir, "cold-git"), workspace.root));
    await settleDisk(dir);
    const gitAddMs = await timeIt(() => firstCommit(join(dir, "cold-git-add"), workspace.root, false));
    log(`  cold @${sizeLabel(workspace.files.length)}: ours ${coldMs.toFixed(0)} ms, git ${gitColdMs.toFixed(0)} ms`);
    // The same with `watch: true` (a session of its own on the same tree): inotify names the changed folders.
    const watching = new CheckpointStore(store, { workspaceIndex: { maxFiles: 1_000_000, watch: true } });
    const watchedSession = await store.create({ workspace: workspace.root });
    await settleDisk(dir);
    const coldWatchedMs = await timeIt(async () => {
      await watching.afterCommand(await watching.beforeCommand(watchedSession.id, { tool: "bash" }));
    });
    log(`  cold, watched: ${coldWatchedMs.toFixed(0)} ms`);
    // The first scan alone and `git add -A` into a fresh repository, again in sessions and repositories of their
    // own, interleaved: with the two above, COLD_SAMPLES of each (one cold run swings with the machine's weather).
    const firstScans = [coldScanMs];
    const gitAdds = [gitAddMs];
    for (let round = 1; round < COLD_SAMPLES; round++) {
      const fresh = await store.create({ workspace: workspace.root });
      await settleDisk(dir);
      let command: Awaited<ReturnType<typeof checkpoints.beforeCommand>> | undefined;
      firstScans.push(
        await timeIt(async () => {
          command = await checkpoints.beforeCommand(fresh.id, { tool: "bash" });
        }),
      );
      await checkpoints.afterCommand(command!);
      await settleDisk(dir);
      gitAdds.push(await timeIt(() => firstCommit(join(dir, `cold-git-add-${round}`), workspace.root, false)));
    }
    const list = (runs: number[]) => runs.map((ms) => ms.toFixed(0)).join(", ");
    log(`  first scans ${list(firstScans)} ms; git add -A ${list(gitAdds)} ms`);

    const samples = await interleavedRounds(rounds, {
      command: async () => {
        await settleDisk(dir);
        return timeIt(() => checkpoints.aroundCommand(session.id, { tool: "bash" }, edit));
      },
      git: async () => {
        await settleDisk(dir);
        return timeIt(async () => {
          await edit();
          await git.checkpoint();
        });
      },
      walks: async () => timeIt(async () => void (statWalk(workspace.root) + statWalk(workspace.root))),
      watched: async () => {
        await settleDisk(dir);
        return timeIt(() => watching.aroundCommand(watchedSession.id, { tool: "bash" }, edit));
      },
      // A later scan: the index brought up to date after one edit (beforeCommand), against `git status`.
      scan: async () => {
        await edit();
        await settleDisk(dir);
        let command: Awaited<ReturnType<typeof checkpoints.beforeCommand>> | undefined;
        const ms = await timeIt(async () => {
          command = await checkpoints.beforeCommand(session.id, { tool: "bash" });
        });
        await checkpoints.afterCommand(command!);
        return ms;
      },
      gitStatus: async () => {
        await edit();
        await settleDisk(dir);
        const ms = await timeIt(async () => void (await git.run(["status", "--porcelain"])));
        await git.checkpoint();
        return ms;
      },
    });
    for (const id of [session.id, watchedSession.id]) {
      const last = (await store.readAll(id)).filter((e) => e.type === "session_checkpoint").at(-1)!;
      const files = (last.payload as { files: { path: string }[] }).files.map((f) => f.path);
      if (files.join() !== workspace.hotFile) throw new Error(`a 1-file command recorded ${files.join(", ")}`);
    }
    watching.close();

    // Rewind of one 1-file command, against git restore + clean to the commit before the edit.
    const rewindSamples = await interleavedRounds(rounds, {
      rewind: async () => {
        const before = (await store.get(session.id))!.lastSequence;
        const expected = await readFile(hot, "utf8");
        await checkpoints.aroundCommand(session.id, { tool: "bash" }, edit);
        await settleDisk(dir);
        const ms = await timeIt(async () => {
          await rewind(store, session.id, { toSequence: before, mode: "files", keepUndo: 0 });
        });
        if ((await readFile(hot, "utf8")) !== expected) throw new Error("rewind did not restore");
        return ms;
      },
      // The same file put back by the durable steps alone, raw (rewind-floor.ts): what the rewind's fsyncs cost.
      floor: async () => {
        await edit();
        await settleDisk(dir);
        return durableRewindFloor(join(dir, "floor-records"), hot, hotFileText(0));
      },
      gitRewind: async () => {
        await git.checkpoint();
        const commit = await git.head();
        const expected = await readFile(hot, "utf8");
        await edit();
        await settleDisk(dir);
        const ms = await timeIt(() => git.restore(commit));
        if ((await readFile(hot, "utf8")) !== expected) throw new Error("git restore did not restore");
        return ms;
      },
    });

    // Memory of the index as loaded from its record (what a process keeps for the session).
    collectGarbage();
    const heapBefore = process.memoryUsage().heapUsed;
    const index = await loadIndex(store.backend, session.id);
    collectGarbage();
    const indexMb = (process.memoryUsage().heapUsed - heapBefore) / (1024 * 1024);
    if ((index?.entries.size ?? 0) < workspace.files.length) throw new Error("the index is missing files");

    return {
      command: perOperation("before + after scan + checkpoint", samples.command),
      git: perOperation("shadow git add -A + commit", samples.git),
      walks: perOperation("2 bare stat walks (readdir + lstat)", samples.walks),
      watched: perOperation("the same, watch: true", samples.watched),
      coldWatchedMs,
      coldMs,
      coldScanMs,
      gitColdMs,
      gitAddMs,
      firstScans,
      gitAdds,
      scan: perOperation("beforeCommand after one edit (a later scan)", samples.scan),
      gitStatus: perOperation("git status --porcelain", samples.gitStatus),
      rewind: perOperation("rewind 1-file command", rewindSamples.rewind),
      gitRewind: perOperation("git restore + git clean", rewindSamples.gitRewind),
      rewindFloor: perOperation("its durable steps alone, raw", rewindSamples.floor),
      indexMb,
    };
  } finally {
    await store.close();
  }
}

/** What a stat-based scan cannot avoid: list every folder and lstat every entry (bigint times, as ours). */
function statWalk(root: string): number {
  let count = 0;
  const queue = [root];
  while (queue.length > 0) {
    const dir = queue.pop()!;
    for (const name of readdirSync(dir)) {
      const path = `${dir}/${name}`;
      if (lstatSync(path, { bigint: true }).isDirectory()) queue.push(path);
      count++;
    }
  }
  return count;
}

/** Shadow git's first checkpoint of a workspace: init, add everything, commit, in a fresh GIT_DIR. */
async function firstCommit(gitDir: string, workTree: string, commit = true): Promise<void> {
  const env = {
    PATH: process.env.PATH,
    GIT_DIR: gitDir,
    GIT_WORK_TREE: workTree,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    LC_ALL: "C",
  };
  const git = (args: string[]) => run("git", args, { cwd: workTree, env, maxBuffer: 64 * 1024 * 1024 });
  await git(["init", "-q"]);
  await git(["add", "-A"]);
  if (!commit) return;
  // No auto-gc: after 50k loose objects it packs them in the background, taking CPU from the rounds that follow.
  await git(["-c", "user.name=b", "-c", "user.email=b@b", "-c", "gc.auto=0", "commit", "-q", "-m", "first"]);
}

/** 100 commands each changing 5 files of a fresh workspace: the index (blobs compressed and not), shadow git. */
async function measureDisk(dir: string, size: number, commands: number, log: (m: string) => void) {
  const workspace = await makeWorkspace(join(dir, "workspace"), size);
  const { git } = await ShadowGit.create(join(dir, "shadow-git"), workspace.root);
  const compressed = new SessionStore({ root: join(dir, "store") });
  const raw = new SessionStore({ backend: fsBackend({ root: join(dir, "store-raw"), compressBlobs: false }) });
  try {
    const ours = new CheckpointStore(compressed, { workspaceIndex: { maxFiles: 1_000_000 } });
    const theirs = new CheckpointStore(raw, { workspaceIndex: { maxFiles: 1_000_000 } });
    const session = await compressed.create({ workspace: workspace.root });
    const rawSession = await raw.create({ workspace: workspace.root });
    const picks = spreadPick(workspace.files, 5 * commands);
    for (let c = 0; c < commands; c++) {
      const files = picks.slice(c * 5, c * 5 + 5);
      const change = () =>
        Promise.all(
          files.map(async (file) => {
            const path = join(workspace.root, file);
            await writeFile(path, editedText(await readFile(path, "utf8"), c));
          }),
        );
      await git.checkpoint();
      // Both stores see the same edit: the raw one records it around a command that changes nothing more.
      await theirs.aroundCommand(rawSession.id, { tool: "bash" }, async () => {
        await ours.aroundCommand(session.id, { tool: "bash" }, change);
      });
    }
    await git.checkpoint();
    const oursMb = await diskMb(join(dir, "store", session.id));
    const rawMb = await diskMb(join(dir, "store-raw", rawSession.id));
    const gitMb = await diskMb(join(dir, "shadow-git"));
    const apparent = {
      ours: await diskMb(join(dir, "store", session.id), true),
      raw: await diskMb(join(dir, "store-raw", rawSession.id), true),
      git: await diskMb(join(dir, "shadow-git"), true),
    };
    log(
      `  disk after ${commands} commands @${sizeLabel(size)}: ours ${oursMb.toFixed(1)} MB ` +
        `(uncompressed ${rawMb.toFixed(1)} MB), git ${gitMb.toFixed(1)} MB`,
    );
    return { commands, size, oursMb, rawMb, gitMb, apparent };
  } finally {
    await compressed.close();
    await raw.close();
  }
}

async function diskMb(path: string, apparent = false): Promise<number> {
  const { stdout } = await run("du", apparent ? ["-sk", "--apparent-size", path] : ["-sk", path]);
  return Number(stdout.split("\t")[0]) / 1024;
}

function rowsFor(sizes: number[], at: Map<number, SizeFigures>, rounds: number): Row[] {
  const rows: Row[] = [];
  const vs = (a: Figure, b: Figure) => `${formatMs(a)} vs ${formatMs(b)} per command`;
  for (const size of sizes) {
    const f = at.get(size)!;
    rows.push({
      suite: `shell command changing 1 file @${sizeLabel(size)} vs shadow git`,
      ours: f.command,
      baseline: f.git,
      ratio: f.command.value / f.git.value,
      target: { op: ">=", value: GIT_SPEEDUP, on: "ratio" },
      notes: `${vs(f.command, f.git)}; ${rounds} rounds, the same 4 KB edit in both`,
      details: { oursMs: medianMs(f.command), gitMs: medianMs(f.git) },
    });
    rows.push({
      suite: `shell command changing 1 file @${sizeLabel(size)}, watched (watch: true), vs shadow git`,
      ours: f.watched,
      baseline: f.git,
      ratio: f.watched.value / f.git.value,
      target: { op: ">=", value: GIT_SPEEDUP, on: "ratio" },
      notes: `${vs(f.watched, f.git)}; inotify names the changed folders, the scans list only those`,
      details: { oursMs: medianMs(f.watched), gitMs: medianMs(f.git) },
    });
    rows.push({
      suite: `shell command changing 1 file @${sizeLabel(size)} vs 2 bare stat walks`,
      ours: f.command,
      baseline: f.walks,
      ratio: f.command.value / f.walks.value,
      target: undefined,
      notes: `${vs(f.command, f.walks)}: the floor of any scan that stats every file before and after`,
      details: { oursMs: medianMs(f.command), walksMs: medianMs(f.walks) },
    });
  }
  const [small, large] = [at.get(sizes[0]!)!, at.get(sizes[1]!)!];
  const growth = medianMs(large.command) / medianMs(small.command);
  const walkGrowth = medianMs(large.walks) / medianMs(small.walks);
  rows.push({
    suite: `shell command cost @${sizeLabel(sizes[1]!)} / @${sizeLabel(sizes[0]!)}, against stat walks'`,
    ours: { ...large.command, label: `per command @${sizeLabel(sizes[1]!)}` },
    baseline: { ...small.command, label: `per command @${sizeLabel(sizes[0]!)}` },
    ratio: growth / walkGrowth,
    target: undefined,
    notes:
      `command grows ${growth.toFixed(2)}x, two stat walks ${walkGrowth.toFixed(2)}x, shadow git ` +
      `${(medianMs(large.git) / medianMs(small.git)).toFixed(2)}x (ratio = command growth / walk growth)`,
    details: { growth, walkGrowth },
  });
  const main = at.get(sizes[0]!)!;
  rows.push({
    suite: `first (cold) scan @${sizeLabel(sizes[0]!)} vs shadow git's first commit`,
    ours: perOperation("first beforeCommand + afterCommand", [main.coldMs]),
    baseline: perOperation("git init + add -A + commit", [main.gitColdMs]),
    ratio: main.gitColdMs / main.coldMs,
    target: { op: ">=", value: COLD_SPEEDUP, on: "ratio" },
    notes: `${main.coldMs.toFixed(0)} ms vs ${main.gitColdMs.toFixed(0)} ms, one run each (every file read and stored)`,
  });
  rows.push({
    suite: `first (cold) scan @${sizeLabel(sizes[0]!)}, watched, vs shadow git's first commit`,
    ours: perOperation("first beforeCommand + afterCommand, watch: true", [main.coldWatchedMs]),
    baseline: perOperation("git init + add -A + commit", [main.gitColdMs]),
    ratio: main.gitColdMs / main.coldWatchedMs,
    target: undefined,
    notes:
      `${main.coldWatchedMs.toFixed(0)} ms vs ${main.gitColdMs.toFixed(0)} ms: ` +
      "the cold scan plus one watch per folder",
  });
  rows.push({
    suite: `rewind a 1-file shell command @${sizeLabel(sizes[0]!)} vs git restore + clean`,
    ours: main.rewind,
    baseline: main.gitRewind,
    ratio: main.rewind.value / main.gitRewind.value,
    target: { op: ">=", value: REWIND_SPEEDUP, on: "ratio" },
    notes: `${formatMs(main.rewind)} vs ${formatMs(main.gitRewind)}; mode "files", keepUndo 0 (git keeps none)`,
  });
  rows.push({
    suite: `rewind a 1-file shell command @${sizeLabel(sizes[0]!)} vs its durable steps alone`,
    ours: main.rewind,
    baseline: main.rewindFloor,
    ratio: main.rewind.value / main.rewindFloor.value,
    target: undefined,
    notes:
      `${formatMs(main.rewind)} vs ${formatMs(main.rewindFloor)}: 4 fsyncs in 3 rounds and an O_DSYNC append, ` +
      "done raw; the rest is the plan, confinement checks and reading the log's tail",
  });
  const big = at.get(sizes[1]!)!;
  for (const size of sizes) {
    const f = at.get(size)!;
    rows.push({
      suite: `first scan @${sizeLabel(size)} vs git add -A into a fresh repository`,
      ours: perOperation("first beforeCommand (every file read and stored)", f.firstScans),
      baseline: perOperation("git init + add -A", f.gitAdds),
      ratio: median(f.gitAdds) / median(f.firstScans),
      target: size === sizes[1] ? { op: ">=", value: COLD_SPEEDUP, on: "ratio" } : undefined,
      notes:
        `${median(f.firstScans).toFixed(0)} ms vs ${median(f.gitAdds).toFixed(0)} ms, medians of ${COLD_SAMPLES} ` +
        "runs each, interleaved, each in a new session or repository (ratio = git time / ours)",
    });
    rows.push({
      suite: `later scan @${sizeLabel(size)} (one file edited) vs git status`,
      ours: f.scan,
      baseline: f.gitStatus,
      ratio: f.scan.value / f.gitStatus.value,
      target: { op: ">=", value: 1, on: "ratio" },
      notes: `${formatMs(f.scan)} vs ${formatMs(f.gitStatus)}; ${rounds} rounds`,
    });
  }
  rows.push({
    suite: `memory of the index of ${sizeLabel(sizes[1]!)} files`,
    ours: { label: "heap after loading the index", value: big.indexMb, unit: "MB" },
    baseline: undefined,
    ratio: undefined,
    target: { op: "<", value: MEMORY_MB, on: "ours" },
    notes: "heapUsed before and after loadIndex, after a gc",
  });
  return rows;
}
