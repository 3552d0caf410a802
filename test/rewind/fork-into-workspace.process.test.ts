import { mkdir, readdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, forkIntoWorkspace, isAgentTapeError } from "../../src/index.js";
import { Child, childrenKilledAfterEach, runChild } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// A fork into its own folder fills the folder first and makes the session last (docs/ARCHITECTURE.md, "Forks"):
// a failure part way leaves neither files nor a session, a kill -9 part way leaves no session claiming the folder.

const children = childrenKilledAfterEach();
const FILES = 1000;

async function parentWith(files: number, big?: number) {
  const base = await realpath(await tempDir("agent-tape-fork-crash-"));
  const root = join(base, "sessions");
  const workspace = join(base, "ws");
  await mkdir(join(workspace, "src"), { recursive: true });
  for (let i = 0; i < files; i++) await writeFile(join(workspace, "src", `f${i}.txt`), `file ${i}\n`.repeat(50));
  if (big !== undefined) await writeFile(join(workspace, "zz-big.bin"), Buffer.alloc(big, 7));
  const store = openStore({ root, lockStaleMs: 1000 });
  const { id } = await store.create({ workspace });
  await store.append(id, { type: "message", payload: { role: "user", content: "go" } });
  // A shell command makes the index track the whole tree.
  await new CheckpointStore(store).aroundCommand(id, { tool: "bash" }, async () => {
    await writeFile(join(workspace, "made.txt"), "made\n");
  });
  await store.close();
  return { base, root, workspace, id };
}

const sessionsClaiming = async (root: string, folder: string) => {
  const store = openStore({ root, lockStaleMs: 1000 });
  try {
    return (await store.list()).filter((s) => s.workspace === folder);
  } finally {
    await store.close();
  }
};

describe("forkIntoWorkspace part way", () => {
  it("a failing write (EFBIG, ulimit -f): FORK_FAILED, the folder it made removed, no session (1 round)", async () => {
    const p = await parentWith(40, 2 * 1024 * 1024);
    const child = join(p.base, "forks", "child");
    const run = await runChild(
      "fork-into-workspace.ts",
      [p.root, p.id, child],
      {},
      {
        fileSizeKiB: 1024,
        pastFileSize: "fail",
      },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ error: "FORK_FAILED", osCode: "EFBIG" });
    expect(await readdir(p.base)).toEqual(["sessions", "ws"]); // forks/ was made by the fork: removed too
    expect(await sessionsClaiming(p.root, child)).toEqual([]);

    // An empty folder given by the caller stays, emptied of what the fork wrote.
    const empty = join(p.base, "empty");
    await mkdir(empty);
    const again = await runChild(
      "fork-into-workspace.ts",
      [p.root, p.id, empty],
      {},
      {
        fileSizeKiB: 1024,
        pastFileSize: "fail",
      },
    );
    expect(JSON.parse(again.stdout)).toMatchObject({ error: "FORK_FAILED" });
    expect(await readdir(empty)).toEqual([]);
    expect(await sessionsClaiming(p.root, empty)).toEqual([]);
  }, 60_000);

  it("kill -9 mid-copy: no session claims the folder, a second try is refused (3 rounds)", async () => {
    const p = await parentWith(FILES);
    for (let round = 0; round < 3; round++) {
      const folder = join(p.base, `child-${round}`);
      const forking = new Child("fork-into-workspace.ts", [p.root, p.id, folder]);
      children.push(forking);
      // Killed as soon as the copy has begun: some files are there, not all.
      for (;;) {
        const made = await readdir(join(folder, "src")).catch(() => []);
        if (made.length > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      forking.kill("SIGKILL");
      const run = await forking.done();
      expect(run.signal).toBe("SIGKILL");
      expect((await readdir(join(folder, "src"))).length).toBeLessThan(FILES);
      expect(await sessionsClaiming(p.root, folder)).toEqual([]);

      const store = openStore({ root: p.root, lockStaleMs: 1000 });
      try {
        const error = await forkIntoWorkspace(store, p.id, { workspace: folder }).catch((e: unknown) => e);
        expect(isAgentTapeError(error, "WORKSPACE_NOT_EMPTY")).toBe(true);
      } finally {
        await store.close();
      }
    }
    // The parent is whole and forks fine into a new folder once the killed holder's lock is stale.
    const store = openStore({ root: p.root, lockStaleMs: 1000 });
    try {
      const report = await forkIntoWorkspace(store, p.id, { workspace: join(p.base, "retry") });
      expect(report.files).toBe(FILES + 1);
    } finally {
      await store.close();
    }
  }, 120_000);
});
