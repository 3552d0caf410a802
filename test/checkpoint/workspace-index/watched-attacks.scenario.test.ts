// Attacks on watched scans (docs/ARCHITECTURE.md, "Watched scans"): two copies of one workspace, one
// session each, the same commands and hand edits in both; the watched session must record exactly the
// checkpoints the walking one records, whatever the commands do to folders, links, ignore rules and
// inode numbers, and whatever else happens between them (hand edits, rewinds, a second store).
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind, type WorkspaceIndexOptions } from "../../../src/index.js";
import {
  closeWorlds,
  inBoth,
  lastFiles as last,
  openWorld,
  sh,
  twinWorkspaces,
  type World,
} from "../../helpers/watched-worlds.js";
import { treeOf } from "../../helpers/workspace-tree.js";
import { tempDir } from "../../helpers/fixture.js";

let base: string;
let watched: World;
let walking: World;

async function worlds(options: WorkspaceIndexOptions = {}): Promise<void> {
  await closeWorlds(watched, walking);
  watched = await openWorld(base, "a", true, options);
  walking = await openWorld(base, "b", false, options);
}

/** Runs `command` in both worlds inside aroundCommand; returns the watched world's checkpoint files. */
const both = (command: string, checkpoints?: CheckpointStore) => inBoth([watched, walking], command, checkpoints);

/** The same change made by hand (no command) in both worlds. */
const byHand = (command: string) => {
  for (const w of [watched, walking]) sh(w, command);
};

const paths = (files: readonly { path: string }[]) => files.map((f) => f.path).sort();

/** The watched world's scans since the first command all listed changed folders only. */
function watchedAllAlong(from: number) {
  const scans = watched.scans.slice(from);
  expect(scans.map((s) => s.reason ?? s.walked)).toEqual(scans.map(() => "changed folders"));
}

beforeEach(async () => {
  base = await realpath(await tempDir("agent-tape-watched-attacks-"));
  await twinWorkspaces(base, async (seed) => {
    await mkdir(join(seed, "src/deep/er"), { recursive: true });
    await mkdir(join(seed, "docs/guide"), { recursive: true });
    for (let i = 0; i < 10; i++) await writeFile(join(seed, `src/f${i}.txt`), `line ${i}\n`);
    await writeFile(join(seed, "src/deep/er/x.txt"), "x\n");
    await writeFile(join(seed, "docs/readme.md"), "# docs\n");
    await writeFile(join(seed, "docs/guide/g.md"), "guide\n");
    await writeFile(join(seed, ".gitignore"), "*.log\nbuild/\n");
  });
  await worlds();
});
afterEach(async () => {
  await closeWorlds(watched, walking);
});

describe("folders renamed, swapped, replaced", () => {
  it("renames and swaps at several depths in one command, then edits in each moved folder", async () => {
    await both("true");
    const from = watched.scans.length;
    await both(
      "mv src/deep/er src/deep/re && mv src/deep src/peed && mv src top && mv docs src && mv top docs" +
        " && mv docs/peed/re docs/re && mv src/guide docs/peed/guide",
    );
    await both("echo 1 > docs/re/x.txt && echo 2 > docs/peed/guide/g.md && echo 3 > src/readme.md");
    await both("echo 4 > docs/f1.txt && mkdir docs/peed/new && echo 5 > docs/peed/new/n");
    await both("echo 6 > docs/peed/new/n && rm docs/re/x.txt");
    watchedAllAlong(from);
  });

  it("a leaf folder renamed, then removed and made again many times (inode numbers come back)", async () => {
    await both("true");
    await both("mv docs/guide docs/manual");
    for (let i = 0; i < 12; i++) {
      await both("rm -rf docs/manual && mkdir docs/manual");
      expect(paths(await both(`echo ${i} > docs/manual/n${i}`)), `round ${i}`).toEqual([`docs/manual/n${i}`]);
    }
  });

  it("the same folder name deleted and made again, in the command and between commands", async () => {
    await both("true");
    for (let i = 0; i < 10; i++) {
      await both(`rm -rf src/deep && mkdir -p src/deep/er && echo ${i} > src/deep/er/x.txt`);
      byHand("rm -rf src/deep/er && mkdir src/deep/er");
      await both(`echo k > src/deep/er/k${i}`);
    }
  });

  it("a folder moved out of the workspace and another moved in under the same name", async () => {
    await both("true");
    await both("mv src ../out-$(basename $PWD) && mkdir ../in-$$ && echo in > ../in-$$/f0.txt && mv ../in-$$ src");
    await both("echo edited > src/f0.txt && echo new > src/f1.txt");
    // The old one comes back: the same inode, watched before under this very name.
    await both("rm -rf src && mv ../out-$(basename $PWD) src");
    await both("echo again > src/deep/er/x.txt");
  });

  it("a folder moved out of the workspace, changed there, and moved back in one command", async () => {
    await both("true");
    await both(
      "A=../away-$(basename $PWD) && mv src $A && echo out > $A/f1.txt && rm -rf $A/deep/er" +
        " && mkdir $A/deep/er && echo e > $A/deep/er/e && mv $A src",
    );
    await both("echo later > src/deep/er/e2 && echo later > src/f2.txt");
  });

  it("the workspace folder itself replaced by a copy, then removed and made again", async () => {
    await both("true");
    await both(
      "cd .. && W=$(basename $OLDPWD) && mv $W $W.old && cp -a $W.old $W && rm -rf $W.old && echo c > $W/src/f1.txt",
    );
    await both("echo after > src/f2.txt && echo x > docs/guide/x");
    await both("cd .. && W=$(basename $OLDPWD) && rm -rf $W && mkdir $W && echo only > $W/only");
    await both("echo again > only && mkdir d && echo d > d/d");
  });

  it("a folder replaced by a link to a folder, and back", async () => {
    await both("true");
    await both("mv src/deep ../deep-$(basename $PWD) && ln -s ../docs src/deep");
    await both("echo via-link > src/deep/readme.md"); // lands in docs/
    await both("rm src/deep && mv ../deep-$(basename $PWD) src/deep");
    await both("echo back > src/deep/er/x.txt && mkdir src/deep/er/z && echo z > src/deep/er/z/z");
    await both("rm -rf docs && ln -s src docs && echo through > docs/f2.txt");
    await both("rm docs && mkdir docs && echo d > docs/d");
  });

  it("files and links swapped, a link retargeted, a folder renamed onto an empty one", async () => {
    await both("true");
    await both(
      "rm src/f1.txt && ln -s f2.txt src/f1.txt && mv docs/readme.md docs/guide/r && ln -s guide/r docs/readme.md",
    );
    await both("ln -sfn f3.txt src/f1.txt && rm docs/readme.md && echo file-again > docs/readme.md");
    await both("mkdir empty && mv -T docs/guide empty && echo in > empty/g.md");
    await both("echo later > empty/r && rm src/f1.txt");
  });

  it("long chains of new nested folders, then a write at the bottom of each", async () => {
    await both("true");
    const from = watched.scans.length;
    await both("for i in $(seq 1 30); do mkdir -p c$i/b/c/d/e/f && touch c$i/b/c/d/e/f/x; done");
    await both("for i in 3 17 30; do echo $i > c$i/b/c/d/e/f/x; mkdir c$i/b/c/d/e/f/g; done");
    expect(paths(await both("echo deep > c17/b/c/d/e/f/g/y"))).toEqual(["c17/b/c/d/e/f/g/y"]);
    watchedAllAlong(from);
  });
});

describe("ignored folders, links, timestamps", () => {
  it("an ignored folder (a .gitignore rule) renamed to a tracked name, and back", async () => {
    byHand("mkdir -p build/sub && echo b > build/sub/o && echo c > build/top");
    await both("true");
    await both("mv build src2");
    await both("echo more > src2/sub/o");
    await both("mv src2 build && echo hidden > build/top");
    await both("mv src build2 && mv build2 build");
    await both("mkdir src && echo s > src/s");
  });

  it("an ignored folder (the ignore option) renamed to a tracked name", async () => {
    await worlds({ ignore: ["gen/", "*.tmp"] });
    byHand("mkdir -p gen/sub && echo g > gen/sub/o && echo t > src/a.tmp");
    await both("true");
    await both("mv gen src/gen && mv src/a.tmp src/a.txt");
    await both("echo again > src/gen/sub/o");
    await both("mv src/gen gen && echo hidden > gen/sub/o");
  });

  it("a .gitignore removed, moved away, then made again", async () => {
    byHand("mkdir -p build && echo b > build/o && echo l > src/x.log");
    await both("true");
    await both("rm .gitignore");
    await both("echo b2 > build/o");
    await both("printf 'build/\\n' > .gitignore");
    await both("echo hidden > build/o && echo seen > src/x.log");
    await both("mkdir -p docs && printf '*.md\\n' > docs/.gitignore");
    await both("echo x > docs/new.md && mv docs/.gitignore docs/gi && echo y > docs/guide/g.md");
  });

  it("files with hard links inside the workspace: a write through one name changes both", async () => {
    await both("true");
    await both("ln src/f1.txt docs/hard && ln src/f2.txt src/deep/er/hard2");
    await both("echo through-one-name >> src/f1.txt");
    await both("echo through-the-other > src/deep/er/hard2");
    await both("chmod 600 docs/hard");
  });

  it("a file whose other name lies outside the workspace, linked before the first scan, written there", async () => {
    byHand("ln src/f8.txt ../hard-$(basename $PWD)");
    await both("true");
    byHand("echo outside >> ../hard-$(basename $PWD)");
    expect(paths(await both("echo inside > src/f9.txt"))).toEqual(["src/f9.txt"]);
    const before = watched.scans.filter((s) => s.phase === "before").at(-1)!;
    expect(before).toMatchObject({ walked: "changed folders", changed: 1 });
  });

  it("a .gitignore written through another name (a hard link): its new rules apply", async () => {
    byHand("mkdir -p out && echo o > out/o");
    await both("true");
    await both("ln .gitignore docs/rules");
    await both("echo 'out/' >> docs/rules");
    await both("echo o2 > out/o && echo d > docs/d");
  });

  it("a file written twice in one timestamp tick across two commands, and touch -r across commands", async () => {
    await both("true");
    for (let i = 0; i < 5; i++) {
      await both(`echo aa${i} > src/f3.txt`);
      await both(`echo bb${i} > src/f3.txt`);
    }
    await both("cp -p src/f4.txt ../keep-$$ && echo CHANGED > src/f4.txt && touch -r ../keep-$$ src/f4.txt");
    await both("echo line > src/f5.txt");
  });

  it("the workspace's own mode changed, and a folder's mode and times", async () => {
    await both("true");
    await both("chmod 700 . && echo x > src/f6.txt");
    await both("chmod 755 . && chmod 700 docs/guide && touch -d '2001-01-01' docs/guide");
    await both("echo y > docs/guide/g.md");
  });
});

describe("between and around commands", () => {
  it("hand edits in folders no command touched are found by the next command", async () => {
    await both("true");
    await both("echo one > src/f1.txt");
    byHand("echo hand > docs/guide/g.md && mkdir -p docs/guide/more/deeper && echo d > docs/guide/more/deeper/d");
    await both("echo two > src/f2.txt");
    const before = watched.scans.filter((s) => s.phase === "before").at(-1)!;
    expect(before).toMatchObject({ walked: "changed folders", changed: 4 });
    byHand("rm -rf docs/guide/more && chmod 600 src/deep/er/x.txt");
    await both("echo three > src/f3.txt");
  });

  it("a command that fails midway is recorded like any other, and the next one too", async () => {
    await both("true");
    for (const w of [watched, walking]) {
      const run = w.checkpoints.aroundCommand(w.id, { tool: "bash" }, () => {
        sh(w, "mkdir -p half/way && echo h > half/way/h && echo x > src/f7.txt");
        throw new Error("the command failed");
      });
      await expect(run).rejects.toThrow("the command failed");
    }
    expect(await last(watched)).toEqual(await last(walking));
    await both("echo after > half/way/h && rm src/f7.txt");
  });

  it("the system's temp folder inside the workspace: the watcher's barrier files are not the workspace's", async () => {
    byHand("mkdir tmp");
    const temp = process.env.TMPDIR;
    process.env.TMPDIR = join(watched.workspace, "tmp");
    try {
      await worlds();
      await both("true");
      await both("echo one > src/f1.txt");
      expect(paths(await both("echo two > tmp/t && echo two > src/f2.txt"))).toEqual(["src/f2.txt", "tmp/t"]);
      watchedAllAlong(2);
    } finally {
      if (temp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = temp;
    }
  });

  it("two checkpoint stores in one process, both watching, take turns on one session", async () => {
    const second = new CheckpointStore(watched.store, { workspaceIndex: { watch: true } });
    try {
      await both("true");
      for (let i = 0; i < 4; i++) {
        await both(`echo ${i} > src/f${i}.txt && mkdir -p n${i}/m && echo ${i} > n${i}/m/f`, second);
        byHand(`echo hand${i} > docs/guide/g.md`);
        await both(`rm -rf n${i} && echo ${i} > docs/d${i}`);
        await both(`echo ${i} >> src/deep/er/x.txt`, second);
        await both(`echo ${i} >> src/deep/er/x.txt`, second);
      }
    } finally {
      second.close();
    }
  });

  it("rewind and undoRewind restore folders; the next watched scans see them", async () => {
    await both("true");
    const start = (await watched.store.get(watched.id))!.lastSequence;
    const startWalking = (await walking.store.get(walking.id))!.lastSequence;
    await both("rm -rf src/deep docs/guide && mv docs manual && mkdir -p q/r && echo q > q/r/s");
    await rewind(watched.store, watched.id, { toSequence: start });
    await rewind(walking.store, walking.id, { toSequence: startWalking });
    expect(await treeOf(watched.workspace)).toEqual(await treeOf(walking.workspace));
    await both("echo in-restored > src/deep/er/x.txt && echo g > docs/guide/g.md");
    await both("echo new > src/deep/er/new && mkdir docs/guide/sub && echo s > docs/guide/sub/s");
    // Rewound again, and that rewind undone: the two commands' files are back.
    await rewind(watched.store, watched.id, { toSequence: start });
    await rewind(walking.store, walking.id, { toSequence: startWalking });
    for (const w of [watched, walking]) await undoRewind(w.store, w.id);
    expect(await treeOf(watched.workspace)).toEqual(await treeOf(walking.workspace));
    await both("echo after-undo > src/deep/er/new && echo r > docs/guide/sub/s2");
    await both("rm -rf src/deep docs/guide");
  });
});
