// A later walk whose stats were taken ahead on helper threads (stat-ahead.ts), changing the index's map in place as a
// later scan does, must find exactly what the same walk finds lstat'ing each path itself into a map of its own, and
// what a first walk of the same tree finds, and must record every change it made (put back, the map is as it was):
// generated trees with odd names (bytes that are not UTF-8, paths past what the threads take), hard links and links,
// changed by generated
// operations between the walks (files rewritten in place, folders removed, moved, swapped for links or files,
// modes changed). The listings of the first walk are trusted as if taken long after (test/helpers/trusted-listings.ts),
// so the walks take the stats ahead wherever a folder's listing still holds.
import { chmod, link, mkdir, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { expect, it } from "vitest";
import { revertWalk } from "../../../src/checkpoint/workspace-index/revert-walk.js";
import { IgnoreRules } from "../../../src/checkpoint/workspace-index/ignore-rules.js";
import type { IndexEntry } from "../../../src/checkpoint/workspace-index/index-entry.js";
import { type Walked, walkWholeInPlace, walkWorkspace } from "../../../src/checkpoint/workspace-index/walk.js";
import { tempDir } from "../../helpers/fixture.js";
import { rounds } from "../../helpers/rounds.js";
import { trustListings } from "../../helpers/trusted-listings.js";

const LONG = "l".repeat(200);
// Folders, shallowest first: the deep chain's paths pass the longest path the threads take (1000 bytes).
const FOLDERS = ["a", "a/b", "a/b/c", "d", "n\u00e9", "sp ace", LONG, `${LONG}/${LONG}`, `${LONG}/${LONG}/${LONG}`];
const DEEP = `${LONG}/${LONG}/${LONG}/${LONG}/${LONG}`;
const NAMES = ["f.txt", "g.md", ".gitignore", "x\ny", "ignored.log"];
const NOT_UTF8 = Buffer.from([0x62, 0xff, 0x2e, 0x74]); // "b\xff.t": a name the OS has only as bytes

type Operation =
  | { kind: "rewrite"; file: number; size: "same" | "other" }
  | { kind: "remove"; file: number }
  | { kind: "removeFolder"; folder: number }
  | { kind: "moveFolder"; folder: number; to: number }
  | { kind: "folderToLink"; folder: number }
  | { kind: "folderToFile"; folder: number }
  | { kind: "fileToFolder"; file: number }
  | { kind: "chmod"; file: number; mode: number }
  | { kind: "hardLink"; file: number; to: number }
  | { kind: "add"; folder: number; name: number };

const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ kind: fc.constant("rewrite" as const), file: fc.nat(), size: fc.constantFrom("same", "other") }),
  fc.record({ kind: fc.constant("remove" as const), file: fc.nat() }),
  fc.record({ kind: fc.constant("removeFolder" as const), folder: fc.nat() }),
  fc.record({ kind: fc.constant("moveFolder" as const), folder: fc.nat(), to: fc.nat() }),
  fc.record({ kind: fc.constant("folderToLink" as const), folder: fc.nat() }),
  fc.record({ kind: fc.constant("folderToFile" as const), folder: fc.nat() }),
  fc.record({ kind: fc.constant("fileToFolder" as const), file: fc.nat() }),
  fc.record({ kind: fc.constant("chmod" as const), file: fc.nat(), mode: fc.constantFrom(0o600, 0o755, 0o444) }),
  fc.record({ kind: fc.constant("hardLink" as const), file: fc.nat(), to: fc.nat() }),
  fc.record({ kind: fc.constant("add" as const), folder: fc.nat(), name: fc.nat() }),
);

const tree = fc.record({
  files: fc.uniqueArray(fc.tuple(fc.nat(FOLDERS.length), fc.nat(NAMES.length)), { minLength: 1, maxLength: 30 }),
  operations: fc.array(operation, { maxLength: 8 }),
});

/** The OS path of a file of the tree: a folder (or the workspace, past the last folder) and a name (or the odd one). */
function fileAt(workspace: string, [folder, name]: [number, number]): string | Buffer {
  const dir = folder < FOLDERS.length ? join(workspace, FOLDERS[folder]!) : workspace;
  if (name < NAMES.length) return join(dir, NAMES[name]!);
  return Buffer.concat([Buffer.from(`${dir}/`), NOT_UTF8]);
}

async function apply(workspace: string, outside: string, files: [number, number][], op: Operation): Promise<void> {
  const file = (i: number) => fileAt(workspace, files[i % files.length]!);
  const folder = (i: number) => join(workspace, FOLDERS[i % FOLDERS.length]!);
  try {
    switch (op.kind) {
      case "rewrite":
        return await writeFile(file(op.file), op.size === "same" ? "changed!\n" : "changed, longer\n");
      case "remove":
        return await rm(file(op.file), { recursive: true, force: true });
      case "removeFolder":
        return await rm(folder(op.folder), { recursive: true, force: true });
      case "moveFolder":
        return await rename(folder(op.folder), `${folder(op.to)}-moved`);
      case "folderToLink": {
        const away = join(outside, `away-${op.folder % FOLDERS.length}`);
        await rename(folder(op.folder), away);
        return await symlink(away, folder(op.folder));
      }
      case "folderToFile":
        await rm(folder(op.folder), { recursive: true, force: true });
        return await writeFile(folder(op.folder), "a file now\n");
      case "fileToFolder":
        await rm(file(op.file), { recursive: true, force: true });
        return await mkdir(file(op.file));
      case "chmod":
        return await chmod(file(op.file), op.mode);
      case "hardLink":
        return await link(file(op.file), `${file(op.to).toString()}-link`);
      case "add":
        return await writeFile(join(folder(op.folder), `new-${op.name % 3}.txt`), "new\n");
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!["ENOENT", "ENOTDIR", "EISDIR", "EEXIST", "ENOTEMPTY", "EINVAL", "EPERM"].includes(code ?? "")) throw error;
  }
}

/** What a walk found, by value: its entries' stats (not which object holds them), and what it reports. */
/** The fields a walk compares to tell a changed stat (sameStatAs). */
const statOf = (e: IndexEntry) => `${e.kind} ${e.size} ${e.mtimeNs} ${e.ctimeNs} ${e.ino} ${e.mode}`;

function found(walked: Walked) {
  const byValue = (entries: ReadonlyMap<string, IndexEntry>) =>
    [...entries]
      .map(([path, e]) => `${path} ${e.kind} ${e.size} ${e.mtimeNs} ${e.ctimeNs} ${e.ino} ${e.mode} ${e.uid}`)
      .sort();
  return {
    entries: byValue(walked.entries),
    ignored: byValue(walked.ignored),
    unlisted: [...walked.unlisted].sort(),
    linked: [...walked.linked].sort(),
    bytes: walked.bytes,
  };
}

const limits = { maxFiles: 100_000, maxBytes: 1 << 30, maxFileBytes: 1 << 20 };
// Inputs tried: 25 in `npm test`, 150 when soaking (test/helpers/rounds.ts).
const RUNS = rounds(25, 150);

it("a walk with its stats taken ahead finds what a walk lstat'ing each path finds", async () => {
  let statsAhead = 0;
  let statsAheadExact = 0;
  await fc.assert(
    fc.asyncProperty(tree, async ({ files, operations }) => {
      const base = await realpath(await tempDir("agent-tape-stat-ahead-"));
      const workspace = join(base, "ws");
      const outside = join(base, "outside");
      await mkdir(outside);
      for (const folder of FOLDERS) await mkdir(join(workspace, folder), { recursive: true });
      await mkdir(join(workspace, DEEP), { recursive: true });
      await writeFile(join(workspace, DEEP, "deep.txt"), "deep\n");
      await writeFile(join(workspace, ".gitignore"), "*.log\n");
      for (const [i, at] of files.entries()) await writeFile(fileAt(workspace, at), `file ${i}\n`);
      const rules = new IgnoreRules();
      const first = await walkWorkspace(workspace, rules, limits);
      const known = { entries: first.entries, folders: trustListings(first.folders) };
      // Past the file clock's tick: a change made now shows in the times the first walk saw.
      await new Promise((resolve) => setTimeout(resolve, 25));
      for (const op of operations) await apply(workspace, outside, files, op);

      // As a later scan walks: stats ahead, the index's map changed in place (a copy here, to compare with); then the
      // same with every stat taken as a BigInt (as past inode numbers a plain stat cannot hold: NFS, overlayfs).
      const walkAhead = (plainInodesUpTo?: number) =>
        walkWholeInPlace(
          workspace,
          rules,
          limits,
          { ...known, entries: new Map(known.entries) },
          undefined,
          0,
          plainInodesUpTo,
        );
      const ahead = await walkAhead();
      const aheadExact = await walkAhead(0);
      const itself = await walkWorkspace(workspace, rules, limits, known, undefined, Number.POSITIVE_INFINITY);
      const fresh = await walkWorkspace(workspace, rules, limits);
      expect(itself.statsAhead).toBe(0);
      statsAhead += ahead.statsAhead;
      expect(found(ahead)).toEqual(found(itself));
      expect([...ahead.differing].sort()).toEqual([...itself.differing].sort());
      expect(ahead.foundAgain).toBe(itself.foundAgain);
      expect(found(aheadExact)).toEqual(found(itself));
      expect([...aheadExact.differing].sort()).toEqual([...itself.differing].sort());
      statsAheadExact += aheadExact.statsAhead;
      // Differing: exactly the paths new to the index or whose stat moved, each other one the known entry itself.
      const moved = (path: string, now: IndexEntry) => {
        const was = known.entries.get(path);
        return was === undefined || statOf(was) !== statOf(now);
      };
      const expectedDiffering = [...fresh.entries].filter(([path, now]) => moved(path, now)).map(([path]) => path);
      expect([...ahead.differing].sort()).toEqual(expectedDiffering.sort());
      for (const [path, entry] of ahead.entries)
        if (!expectedDiffering.includes(path)) expect(entry, path).toBe(known.entries.get(path));
      expect(found(ahead)).toEqual(found(fresh));
      // What it changed in place is all in `prior`: put back, the map is the one it started from, entry for entry.
      revertWalk(ahead.entries, ahead.prior!);
      expect(ahead.entries.size).toBe(known.entries.size);
      for (const [path, entry] of known.entries) expect(ahead.entries.get(path), path).toBe(entry);
    }),
    { numRuns: RUNS },
  );
  expect(statsAhead).toBeGreaterThan(RUNS); // the stats were taken ahead, not left to the walk
  expect(statsAheadExact).toBeGreaterThan(RUNS);
}, 240_000);
