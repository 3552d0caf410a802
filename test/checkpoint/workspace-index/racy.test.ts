// Git's racy rule: a file written twice within one timestamp tick keeps size, mtime and ctime, so
// a stat cannot tell the second write. Which writes share a tick depends on the clock, so this
// builds the case directly: an index whose entry has exactly the file's stat but older content.
import { execFileSync } from "node:child_process";
import { lstat, mkdir, realpath, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SessionStore } from "../../../src/index.js";
import { memoryBackend } from "../../../src/backend/index.js";
import type { LockedSession } from "../../../src/backend/types.js";
import { IgnoreRules } from "../../../src/checkpoint/workspace-index/ignore-rules.js";
import { entryOf } from "../../../src/checkpoint/workspace-index/walk.js";
import { scanWorkspace } from "../../../src/checkpoint/workspace-index/scan.js";
import type { WorkspaceIndex } from "../../../src/checkpoint/workspace-index/index-entry.js";
import { openStore, tempDir } from "../../helpers/fixture.js";

let workspace: string;
let store: SessionStore;
let locked: LockedSession;

beforeEach(async () => {
  workspace = join(await realpath(await tempDir("agent-tape-racy-")), "ws");
  await mkdir(workspace);
  await writeFile(join(workspace, "a.txt"), "again\n");
  store = openStore({ backend: memoryBackend() });
  const { id } = await store.create({ workspace });
  locked = await store.backend.lock(id);
});
afterEach(async () => {
  await locked.release();
  await store.close();
});

const OLD_HASH = "0".repeat(64); // what the index thinks a.txt held: "first\n", same size
const options = { maxFiles: 100, maxBytes: 1 << 20, maxFileBytes: 1 << 20, concurrency: 2 };

async function indexWithSameStat(racy: boolean): Promise<WorkspaceIndex> {
  const entry = { ...entryOf(await lstat(join(workspace, "a.txt"), { bigint: true })), hash: OLD_HASH, racy };
  return { workspace, generation: 1, entries: new Map([["a.txt", entry]]) };
}

it("an entry read within the racy window is read again even though its stat is unchanged", async () => {
  const scan = await scanWorkspace(locked, await indexWithSameStat(true), new IgnoreRules(), options);
  expect(scan.changed).toEqual(["a.txt"]);
  expect(scan.index.entries.get("a.txt")!.hash).not.toBe(OLD_HASH);
});

it("an entry outside the racy window is trusted on its stat (one lstat, no read)", async () => {
  const scan = await scanWorkspace(locked, await indexWithSameStat(false), new IgnoreRules(), options);
  expect(scan.changed).toEqual([]);
  expect(scan.index.entries.get("a.txt")!.hash).toBe(OLD_HASH);
});

it("a file just written is marked racy, so the next scan reads it again", async () => {
  const scan = await scanWorkspace(
    locked,
    { workspace, generation: 0, entries: new Map() },
    new IgnoreRules(),
    options,
  );
  expect(scan.index.entries.get("a.txt")!.racy).toBe(true);
});

// The same rule for folders (walk.ts): a folder whose stat is what it was when listed is not listed
// again. Built directly too: an index whose listing of `d` has exactly d's stat but names only a.txt.
describe("a folder's listing is trusted only outside the racy window and while its stat holds", () => {
  async function indexWithListing(listedAfterNs: bigint): Promise<WorkspaceIndex> {
    const scan = await scanWorkspace(
      locked,
      { workspace, generation: 0, entries: new Map() },
      new IgnoreRules(),
      options,
    );
    const d = await lstat(join(workspace, "d"), { bigint: true });
    const listing = { mtimeNs: d.mtimeNs, ctimeNs: d.ctimeNs, ino: d.ino, names: ["a.txt"] };
    const folders = new Map([["d", { ...listing, listedAtNs: d.mtimeNs + listedAfterNs }]]);
    // Every entry trusted on its stat: only the folder rule decides whether d/b.txt is seen.
    for (const entry of scan.index.entries.values()) entry.racy = false;
    return { ...scan.index, entries: new Map([...scan.index.entries].filter(([p]) => p !== "d/b.txt")), folders };
  }

  beforeEach(async () => {
    await mkdir(join(workspace, "d"));
    await writeFile(join(workspace, "d/a.txt"), "a\n");
    await writeFile(join(workspace, "d/b.txt"), "b\n"); // there, but not in the listing below
  });

  it("a listing taken outside the racy window of the folder's stat is used (the folder is not read)", async () => {
    const scan = await scanWorkspace(locked, await indexWithListing(3_000_000_000n), new IgnoreRules(), options);
    expect(scan.changed).toEqual([]);
    expect(scan.index.entries.has("d/b.txt")).toBe(false);
  });

  it("a listing taken within the racy window (a name added in the same tick) is not trusted", async () => {
    const scan = await scanWorkspace(locked, await indexWithListing(1_000_000n), new IgnoreRules(), options);
    expect(scan.changed).toEqual(["d/b.txt"]);
  });

  it("a file added to a folder whose mtime was put back (touch -r) is found: ctime moved", async () => {
    const index = await indexWithListing(3_000_000_000n);
    execFileSync("touch", ["-r", "d", "d-times"], { cwd: workspace }); // to the nanosecond, as utimensat takes it
    await writeFile(join(workspace, "d/c.txt"), "c\n");
    execFileSync("touch", ["-r", "d-times", "d"], { cwd: workspace });
    await rm(join(workspace, "d-times"));
    expect((await lstat(join(workspace, "d"), { bigint: true })).mtimeNs).toBe(index.folders!.get("d")!.mtimeNs);
    const scan = await scanWorkspace(locked, index, new IgnoreRules(), options);
    expect(scan.changed).toEqual(["d/b.txt", "d/c.txt"]);
  });

  it("a folder listed by a real scan right after it changed is listed again by the next", async () => {
    const fresh = await scanWorkspace(
      locked,
      { workspace, generation: 0, entries: new Map() },
      new IgnoreRules(),
      options,
    );
    // As if d/b.txt had been made after the listing, within the same tick: the stat of d would not show it.
    const listing = fresh.index.folders!.get("d")!;
    fresh.index.folders!.set("d", { ...listing, names: ["a.txt"] });
    fresh.index.entries.delete("d/b.txt");
    const again = await scanWorkspace(locked, fresh.index, new IgnoreRules(), options);
    expect(again.changed).toEqual(["d/b.txt"]);
  });
});

// A racy entry is read again by every scan in its window; when the read finds what the index holds (same stat,
// same hash, still racy) the record has nothing to be told. Each delta repeated every such entry before: in the
// bench's session (a command every second) a delta held 76 rows for the dozen paths a command changed.
describe("a racy entry read again and found the same is not told to the index's record", () => {
  const empty = (): WorkspaceIndex => ({ workspace, generation: 0, entries: new Map() });

  it("a second scan within the window sets nothing, and changes nothing", async () => {
    const first = await scanWorkspace(locked, empty(), new IgnoreRules(), options);
    expect(first.index.entries.get("a.txt")!.racy).toBe(true);
    const again = await scanWorkspace(locked, first.index, new IgnoreRules(), options);
    expect(again.index.entries.get("a.txt")!.racy).toBe(true); // read again: still within the window
    expect(again.set).toEqual([]);
    expect(again.changed).toEqual([]);
  });

  it("one that left the window is told (its flag changed), as is one whose bytes changed", async () => {
    await writeFile(join(workspace, "b.txt"), "b\n");
    const first = await scanWorkspace(locked, empty(), new IgnoreRules(), options);
    await new Promise((resolve) => setTimeout(resolve, 2_100)); // past the 2 s window of both writes
    await writeFile(join(workspace, "b.txt"), "B\n");
    const again = await scanWorkspace(locked, first.index, new IgnoreRules(), options);
    expect(again.index.entries.get("a.txt")!.racy).toBeFalsy();
    expect(again.set.sort()).toEqual(["a.txt", "b.txt"]);
    expect(again.changed).toEqual(["b.txt"]);
  });
});
