// A stat the helper threads took ahead (stat-ahead.ts) can be old by the time the walk reaches its name: the file
// changed again, went away, or became a folder in between. Where what the thread saw differs from the index, the walk
// must record what is there when it looks (an lstat of its own), never the thread's stat: the entry it makes is the
// one a fresh walk makes. The changes land after the threads' lstats: the walk's first hook (its root, before any
// name) holds the walk until the threads are done, then makes them.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { revertWalk } from "../../../src/checkpoint/workspace-index/revert-walk.js";
import { IgnoreRules } from "../../../src/checkpoint/workspace-index/ignore-rules.js";
import type { IndexEntry } from "../../../src/checkpoint/workspace-index/index-entry.js";
import { walkWholeInPlace, walkWorkspace } from "../../../src/checkpoint/workspace-index/walk.js";
import type { WalkHooks } from "../../../src/checkpoint/workspace-index/walk-types.js";
import { tempDir } from "../../helpers/fixture.js";
import { trustListings } from "../../helpers/trusted-listings.js";

const limits = { maxFiles: 100_000, maxBytes: 1 << 30, maxFileBytes: 1 << 20 };
/** Long enough for two helper threads to start and lstat a few dozen names on a loaded machine. */
const THREADS_DONE_MS = 1000;

/** A hook that, at the walk's first folder, waits out the threads (blocking the walk) and then runs `change`. */
function changingAfterTheThreads(change: () => void): WalkHooks {
  let done = false;
  return {
    beforeListing() {
      if (!done) {
        done = true;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, THREADS_DONE_MS);
        change();
      }
      return false;
    },
  };
}

const byValue = (entries: ReadonlyMap<string, IndexEntry>) =>
  [...entries].map(([path, e]) => `${path} ${e.kind} ${e.size} ${e.mtimeNs} ${e.ctimeNs} ${e.ino} ${e.mode}`).sort();

it("records what is there when the walk looks, not the stat a thread took before a later change", async () => {
  const workspace = join(await realpath(await tempDir("agent-tape-stat-ahead-moved-")), "ws");
  for (const folder of ["a", "b", "c"]) {
    await mkdir(join(workspace, folder), { recursive: true });
    for (let i = 0; i < 10; i++) await writeFile(join(workspace, folder, `f${i}.txt`), `file ${i}\n`);
  }
  const rules = new IgnoreRules();
  const first = await walkWorkspace(workspace, rules, limits);
  const known = { entries: first.entries, folders: trustListings(first.folders) };
  await new Promise((resolve) => setTimeout(resolve, 25)); // past the file clock's tick
  // Changed before the walk: the threads see each changed, which the index does not know.
  for (const path of ["a/f1.txt", "a/f2.txt", "b/f3.txt", "c/f4.txt"]) await writeFile(join(workspace, path), "new\n");

  const index = new Map(known.entries);
  const walked = await walkWholeInPlace(
    workspace,
    rules,
    limits,
    { ...known, entries: index },
    changingAfterTheThreads(() => {
      rmSync(join(workspace, "a/f1.txt")); // gone
      rmSync(join(workspace, "a/f2.txt"));
      mkdirSync(join(workspace, "a/f2.txt")); // a folder now
      writeFileSync(join(workspace, "a/f2.txt/inside.txt"), "inside\n");
      writeFileSync(join(workspace, "b/f3.txt"), "changed again, and longer\n"); // changed again
    }),
    0,
  );
  expect(walked.statsAhead).toBeGreaterThan(20);
  const fresh = await walkWorkspace(workspace, rules, limits);
  // Folder a's own stat moved after the threads took it unchanged: like any change after the lstat, the next scan
  // sees it. Every other entry is what is there now.
  const allBut = (entries: ReadonlyMap<string, IndexEntry>) => byValue(entries).filter((row) => !row.startsWith("a "));
  expect(allBut(index)).toEqual(allBut(fresh.entries));
  expect(index.has("a/f1.txt")).toBe(false);
  expect(index.get("a/f2.txt")?.kind).toBe("directory");
  expect(index.get("b/f3.txt")?.size).toBe("changed again, and longer\n".length);
  expect([...walked.differing].sort()).toEqual(["a/f2.txt", "a/f2.txt/inside.txt", "b/f3.txt", "c/f4.txt"]);
  // Put back, the index is the one the walk started from.
  revertWalk(index, walked.prior!);
  expect(byValue(index)).toEqual(byValue(known.entries));
}, 30_000);
