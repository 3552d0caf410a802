// Git's racy rule: a file written twice within one timestamp tick keeps size, mtime and ctime, so
// a stat cannot tell the second write. Which writes share a tick depends on the clock, so this
// builds the case directly: an index whose entry has exactly the file's stat but older content.
import { lstat, mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { SessionStore, memoryBackend } from "../../../src/index.js";
import type { LockedSession } from "../../../src/backend/types.js";
import { IgnoreRules } from "../../../src/checkpoint/workspace-index/ignore-rules.js";
import { entryOf } from "../../../src/checkpoint/workspace-index/walk.js";
import { scanWorkspace } from "../../../src/checkpoint/workspace-index/scan.js";
import type { WorkspaceIndex } from "../../../src/checkpoint/workspace-index/index-entry.js";
import { TempRoots } from "../../helpers/temp-root.js";

const temps = new TempRoots();
let workspace: string;
let store: SessionStore;
let locked: LockedSession;

beforeEach(async () => {
  workspace = join(await realpath(await temps.make("agent-tape-racy-")), "ws");
  await mkdir(workspace);
  await writeFile(join(workspace, "a.txt"), "again\n");
  store = new SessionStore({ backend: memoryBackend() });
  const { id } = await store.create({ workspace });
  locked = await store.backend.lock(id);
});
afterEach(async () => {
  await locked.release();
  await store.close();
  await temps.removeAll();
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
