// Watched scans (workspaceIndex.watch) against the whole walk: two copies of one workspace, one
// session each, the same commands and hand edits in both; the watched session must record exactly
// the checkpoints the walking one records, while listing only the folders that changed.
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind } from "../../../src/index.js";
import {
  closeWorlds,
  inBoth,
  lastFiles as last,
  openWorld as world,
  sh,
  twinWorkspaces,
  type World,
} from "../../helpers/watched-worlds.js";
import { treeOf } from "../../helpers/workspace-tree.js";
import { tempDir } from "../../helpers/fixture.js";

let base: string;
let watched: World;
let walking: World;

/** Runs `command` in both worlds inside aroundCommand; returns the watched world's checkpoint files. */
const both = (command: string) => inBoth([watched, walking], command);

beforeEach(async () => {
  base = await realpath(await tempDir("agent-tape-watched-"));
  await twinWorkspaces(base, async (seed) => {
    await mkdir(join(seed, "src/deep/er"), { recursive: true });
    await mkdir(join(seed, "docs"), { recursive: true });
    for (let i = 0; i < 40; i++) await writeFile(join(seed, `src/f${i}.txt`), `line ${i}\n`);
    await writeFile(join(seed, "src/deep/er/x.txt"), "x\n");
    await writeFile(join(seed, "docs/readme.md"), "# docs\n");
    await writeFile(join(seed, ".gitignore"), "*.log\nbuild/\n");
  });
  watched = await world(base, "a", true);
  walking = await world(base, "b", false);
});
afterEach(async () => {
  await closeWorlds(watched, walking);
});

const COMMANDS = [
  "sed -i 's/line 3/LINE 3/' src/f3.txt",
  "rm -rf src/deep",
  "mkdir -p a/b && echo x > a/b/c",
  "mv docs manual",
  "chmod +x src/f1.txt && chmod 700 src",
  "ln -s f1.txt src/link && ln -s ../docs src/dirlink",
  "for i in $(seq 1 500); do echo $i > src/gen$i.txt; done",
  "mkdir -p n1/n2/n3 && echo deep > n1/n2/n3/f && echo also > n1/top",
  "mv src/deep/er src/er2 && mkdir src/deep/er && echo new > src/deep/er/y.txt",
  "rm src/f5.txt && mkdir src/f5.txt && echo in > src/f5.txt/inside",
  "rm -rf docs && echo now-a-file > docs",
  "mkdir t && mv src t/ && mv docs src && mv t/src docs && rmdir t",
  "echo ignored > src/out.log && mkdir -p build && echo b > build/o && echo tracked > src/f20.txt",
  "mv src ../outside-$$ && sleep 0 && mv ../outside-$$ src2",
  "echo a > src/f7.txt && echo b >> src/f7.txt && truncate -s 1 src/f8.txt",
];

describe("watched scans record what whole walks record", () => {
  for (const command of COMMANDS)
    it(command, async () => {
      await both("true"); // both indexes exist, and the watcher watches
      const files = await both(command);
      expect(files!.length, "the command changed something tracked").toBeGreaterThan(0);
      // The watched session listed only what changed: never the whole tree, once it watched.
      const afterScans = watched.scans.filter((s) => s.phase === "after").slice(1);
      expect(afterScans.map((s) => s.walked)).toEqual(afterScans.map(() => "changed folders"));
      expect(walking.scans.at(-1)!.walked).toBe("whole");
    });

  it("a hand edit between commands is found by the next command's first scan", async () => {
    await both("true");
    for (const w of [watched, walking]) await writeFile(join(w.workspace, "src/f9.txt"), "edited by hand\n");
    await both("echo more > src/f10.txt");
    const before = watched.scans.filter((s) => s.phase === "before").at(-1)!;
    expect(before).toMatchObject({ walked: "changed folders", changed: 1 });
  });

  it("a file written twice in one mtime tick, and one with its mtime put back (touch -r), are both seen", async () => {
    await both("true");
    await both(
      "echo one > src/f11.txt; echo two > src/f11.txt; cp -p src/f12.txt /tmp/keep-$$; " +
        "echo changed > src/f12.txt; touch -r /tmp/keep-$$ src/f12.txt; rm /tmp/keep-$$",
    );
    const files = await last(watched);
    expect(files.map((f) => f.path).sort()).toEqual(["src/f11.txt", "src/f12.txt"]);
  });

  it("a folder removed and made again (its inode number reused, its watch dead) is watched anew", async () => {
    await both("true");
    await both("rm -rf src/deep/er && mkdir src/deep/er");
    await both("echo late > src/deep/er/late.txt");
    expect((await last(watched)).map((f) => f.path)).toEqual(["src/deep/er/late.txt"]);
    await both("rm -rf src && mkdir src && echo back > src/f0.txt");
    await both("echo later > src/f1.txt");
    expect((await last(watched)).map((f) => f.path)).toEqual(["src/f1.txt"]);
  });

  it("a folder moved, then removed and made again: its watch is made afresh, whatever libuv names it", async () => {
    // libuv names the events of an inode after the first path watched for it (here src/deep/er), so an
    // event cannot tell that docs/er2 itself went away; its watch has to be renewed all the same.
    await both("true");
    await both("mv src/deep/er docs/er2");
    await both("rm -rf docs/er2 && mkdir docs/er2");
    await both("echo late > docs/er2/late.txt");
    expect((await last(watched)).map((f) => f.path)).toEqual(["docs/er2/late.txt"]);
  });

  it("a .gitignore edit walks the whole tree, and says why", async () => {
    await both("true");
    await both("printf 'build/\\n' > .gitignore && echo now-tracked > keep.log");
    const scan = watched.scans.at(-1)!;
    expect(scan).toMatchObject({ walked: "whole", reason: "a .gitignore changed" });
  });

  it("unchanged folders cost nothing: a 1-file command lists one folder and lstats what it holds", async () => {
    await both("true");
    await both("echo changed > docs/readme.md");
    const after = watched.scans.at(-1)!;
    expect(after).toMatchObject({ walked: "changed folders", listed: 1, statted: 1, changed: 1 });
    const before = watched.scans.at(-2)!;
    expect(before).toMatchObject({ walked: "changed folders", listed: 0, statted: 0 });
  });

  it("rewinds and undos of watched commands restore the tree, and later commands still match", async () => {
    await both("true");
    const seed = await treeOf(watched.workspace);
    const start = (await watched.store.get(watched.id))!.lastSequence;
    await both("rm -rf src/deep && echo x > src/f0.txt && mkdir -p q/r && echo q > q/r/s");
    const done = await treeOf(watched.workspace);
    for (const w of [watched, walking]) await rewind(w.store, w.id, { toSequence: start });
    expect(await treeOf(watched.workspace)).toEqual(seed);
    // The rewind's writes raise events too: the next command sees the tree as the rewind left it.
    await both("echo after-rewind > src/f2.txt");
    await both("rm -rf q src/f1.txt");
    for (const w of [watched, walking]) await rewind(w.store, w.id, { toSequence: start });
    for (const w of [watched, walking]) await undoRewind(w.store, w.id);
    expect(await treeOf(watched.workspace)).toEqual(await treeOf(walking.workspace));
    expect(await treeOf(watched.workspace)).not.toEqual(done);
    await both("echo again > src/f3.txt && rm -rf src/deep");
  });
});

describe("what the watcher cannot vouch for is walked", () => {
  it("another process's scan: the index on record is not the watcher's", async () => {
    await both("true");
    const other = new CheckpointStore(watched.store);
    await other.aroundCommand(watched.id, { tool: "bash" }, () => sh(watched, "echo other > src/f13.txt"));
    await watched.checkpoints.aroundCommand(watched.id, { tool: "bash" }, () => sh(watched, "echo mine > src/f14.txt"));
    const [before, after] = watched.scans.slice(-2);
    expect(before).toMatchObject({ walked: "whole", reason: "the index was not this watcher's" });
    expect(after).toMatchObject({ walked: "changed folders" });
    expect((await last(watched)).map((f) => f.path)).toEqual(["src/f14.txt"]);
  });

  it("a watcher that cannot start (no temp folder to write its barrier in) walks, and says why", async () => {
    const temp = process.env.TMPDIR;
    process.env.TMPDIR = join(base, "no-such-folder");
    try {
      await both("echo x > src/f17.txt");
      await both("echo y > src/f18.txt");
    } finally {
      if (temp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = temp;
    }
    expect(watched.scans.map((s) => s.walked)).toEqual(["whole", "whole", "whole", "whole"]);
    expect(watched.scans.at(-1)!.reason).toMatch(/^the watcher could not start \(ENOENT/);
  });

  it("a scan that fails (over maxFiles) spends none of the changes the watcher named", async () => {
    await closeWorlds(watched, walking);
    watched = await world(base, "a", true, { maxFiles: 60 });
    walking = await world(base, "b", false, { maxFiles: 60 });
    await both("true");
    for (const w of [watched, walking]) {
      const command = w.checkpoints.aroundCommand(w.id, { tool: "bash" }, () =>
        sh(w, "echo changed > src/f1.txt && mkdir many && for i in $(seq 1 30); do echo $i > many/$i; done"),
      );
      await expect(command).rejects.toMatchObject({ code: "WORKSPACE_TOO_LARGE" });
      sh(w, "rm -rf many");
    }
    // src/f1.txt changed in the failed round: a later command that deletes it records the bytes it had.
    await both("rm src/f1.txt");
    const [snapshot] = await last(watched);
    expect(snapshot).toMatchObject({ path: "src/f1.txt", kind: "blob", bytes: "changed\n".length });
  });

  it("a closed watcher's store walks, then watches again", async () => {
    await both("true");
    watched.checkpoints.close();
    await both("echo z > src/f15.txt");
    expect(watched.scans.filter((s) => s.phase === "before").at(-1)!.walked).toBe("whole");
    await both("echo z > src/f16.txt");
    expect(watched.scans.at(-1)!.walked).toBe("changed folders");
  });
});
