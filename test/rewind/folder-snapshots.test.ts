import { execFileSync } from "node:child_process";
import { mkdir, readFile, readdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, isAgentTapeError, rewind, undoRewind } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// Folder snapshots mean what they say (docs/ARCHITECTURE.md, "Rewind intent"): a folder
// captured whole lists everything below it, so a rewind to before it removes what it did not list; a folder
// captured past its budget is partial, and a rewind keeps (and reports) what it could not list.

async function session(options: { maxDirectoryEntries?: number } = {}) {
  const base = await realpath(await tempDir("agent-tape-folder-snapshots-"));
  const workspace = join(base, "ws");
  await mkdir(join(workspace, "src"), { recursive: true });
  await writeFile(join(workspace, "src", "a.txt"), "a1");
  await writeFile(join(workspace, "src", "b.txt"), "b1");
  const store = openStore({ root: join(base, "sessions") });
  const { id } = await store.create({ workspace });
  const start = await store.append(id, { type: "message", payload: { role: "user", content: "go" } });
  const checkpoints = new CheckpointStore(store, options);
  return { workspace, store, id, checkpoints, target: start.sequence };
}

const tree = async (dir: string): Promise<string[]> => (await readdir(dir, { recursive: true })).map(String).sort();

describe("folder snapshots", () => {
  it("a rewind to before a whole-folder capture removes what the capture did not list, empty folders too", async () => {
    const s = await session();
    await s.checkpoints.capture(s.id, { tool: "shell", paths: ["src"] });
    // What the command did, unseen by any capture: a new file, a new empty folder, a new nested file.
    await writeFile(join(s.workspace, "src", "new.txt"), "made by the command");
    await mkdir(join(s.workspace, "src", "empty"));
    await mkdir(join(s.workspace, "src", "gen", "deep"), { recursive: true });
    await writeFile(join(s.workspace, "src", "gen", "deep", "x.ts"), "generated");
    await writeFile(join(s.workspace, "src", "a.txt"), "a2");

    const dry = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true });
    expect(dry.changes.map((c) => `${c.action} ${c.path}`)).toEqual([
      "restore src/a.txt",
      "delete src/empty",
      "delete src/gen",
      "delete src/new.txt",
    ]);
    await rewind(s.store, s.id, { toSequence: s.target });
    expect(await tree(join(s.workspace, "src"))).toEqual(["a.txt", "b.txt"]);
    expect(await readFile(join(s.workspace, "src", "a.txt"), "utf8")).toBe("a1");

    await undoRewind(s.store, s.id);
    expect(await tree(join(s.workspace, "src"))).toEqual([
      "a.txt",
      "b.txt",
      "empty",
      "gen",
      "gen/deep",
      "gen/deep/x.ts",
      "new.txt",
    ]);
    expect(await readFile(join(s.workspace, "src", "gen", "deep", "x.ts"), "utf8")).toBe("generated");
  });

  it("a file created after the folder capture and then edited by a tool is absent at the target", async () => {
    const s = await session();
    await s.checkpoints.capture(s.id, { tool: "shell", paths: ["src"] });
    await writeFile(join(s.workspace, "src", "gen.txt"), "the shell's content");
    // Another tool edits it: its before-snapshot holds the shell's content, the closest one to the target.
    await s.checkpoints.capture(s.id, { tool: "edit", paths: ["src/gen.txt"] });
    await writeFile(join(s.workspace, "src", "gen.txt"), "the edit's content");

    await rewind(s.store, s.id, { toSequence: s.target });
    expect(await tree(join(s.workspace, "src"))).toEqual(["a.txt", "b.txt"]);
  });

  it("a folder captured past its entry budget is partial: what it did not list is kept and reported", async () => {
    const s = await session({ maxDirectoryEntries: 1 });
    await s.checkpoints.capture(s.id, { tool: "shell", paths: ["src"] });
    await writeFile(join(s.workspace, "src", "new.txt"), "made by the command");

    const done = await rewind(s.store, s.id, { toSequence: s.target });
    expect(await tree(join(s.workspace, "src"))).toEqual(["a.txt", "b.txt", "new.txt"]);
    expect(done.changes).toContainEqual(
      expect.objectContaining({ path: "src", action: "skip", reason: expect.stringContaining("over_budget") }),
    );
  });

  it("a folder captured file by file is not a listing: files beside them are kept", async () => {
    const s = await session();
    await s.checkpoints.capture(s.id, { tool: "edit", paths: ["src/a.txt"] });
    await writeFile(join(s.workspace, "src", "new.txt"), "the user's");
    await writeFile(join(s.workspace, "src", "a.txt"), "a2");
    await rewind(s.store, s.id, { toSequence: s.target });
    expect(await tree(join(s.workspace, "src"))).toEqual(["a.txt", "b.txt", "new.txt"]);
  });

  it("a failed rewind with unnamed paths to remove is rolled back by the next writer once fixed", async () => {
    // Its intent names paths the tape never named (found on disk below a complete listing): the intent check
    // a writer runs before acting on an intent must accept them, as the plan made them. The caller saw the
    // rewind fail, so the writer puts the files back as they were before it, never forward.
    const s = await session();
    await s.checkpoints.capture(s.id, { tool: "shell", paths: ["src"] });
    await writeFile(join(s.workspace, "src", "new.txt"), "made by the command");
    await writeFile(join(s.workspace, "src", "a.txt"), "a2");
    const locked = join(s.workspace, "src", "a.txt");
    execFileSync("chattr", ["+i", locked]); // neither restored nor put back: the rewind stays pending
    try {
      const failed = await rewind(s.store, s.id, { toSequence: s.target }).catch((e: unknown) => e);
      expect(isAgentTapeError(failed, "REWIND_FAILED")).toBe(true);
    } finally {
      execFileSync("chattr", ["-i", locked]);
    }
    const next = openStore({ root: join(s.workspace, "..", "sessions") });
    await next.append(s.id, { type: "message", payload: { role: "user", content: "after the fix" } });
    expect(await tree(join(s.workspace, "src"))).toEqual(["a.txt", "b.txt", "new.txt"]);
    expect(await readFile(locked, "utf8")).toBe("a2");
    expect(await readFile(join(s.workspace, "src", "new.txt"), "utf8")).toBe("made by the command");
    expect(await next.backend.listRecords(s.id)).not.toContain("rewind-intent");
  });
});
