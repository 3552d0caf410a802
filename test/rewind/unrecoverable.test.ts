import { mkdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind } from "../../src/index.js";
import { codeOf } from "../helpers/outcomes.js";
import { cli } from "../cli/harness.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { cliStore } from "../helpers/store-backends.js";

// A rewind never destroys content it cannot give back without being told (docs/ARCHITECTURE.md,
// "Confinement"): the undo snapshot keeps files up to 5 MiB, so a bigger one would be lost for good.

const SIX_MB = 6 * 1000 * 1000;

/** A session whose `f.txt` was captured as a small file; `then` changes the workspace after the capture. */
async function captured(paths: string[], then: (workspace: string) => Promise<void>) {
  const base = await realpath(await tempDir("agent-tape-unrecoverable-"));
  const workspace = join(base, "ws");
  await mkdir(workspace);
  await writeFile(join(workspace, "f.txt"), "v1");
  const root = join(base, "sessions");
  const store = openStore({ root });
  const { id } = await store.create({ workspace });
  const start = await store.append(id, { type: "message", payload: { role: "user", content: "go" } });
  await new CheckpointStore(store).capture(id, { tool: "edit", paths });
  await then(workspace);
  return { workspace, root, store, id, target: start.sequence };
}

describe("a rewind that would destroy content with no copy for undo", () => {
  it("a file become a folder holding a 6 MB video: listed in the dry run, refused, allowed on request", async () => {
    const s = await captured(["f.txt"], async (ws) => {
      await rm(join(ws, "f.txt"));
      await mkdir(join(ws, "f.txt"));
      await writeFile(join(ws, "f.txt", "video.bin"), Buffer.alloc(SIX_MB, 7));
      await writeFile(join(ws, "f.txt", "notes.md"), "small");
    });
    const dry = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true });
    expect(dry.changes).toEqual([
      expect.objectContaining({
        path: "f.txt",
        action: "restore",
        unrecoverable: [expect.objectContaining({ path: "f.txt/video.bin", reason: "too_large" })],
      }),
    ]);
    expect(dry.unrecoverable).toEqual(["f.txt/video.bin"]);

    expect(await codeOf(rewind(s.store, s.id, { toSequence: s.target }))).toBe("UNRECOVERABLE_CHANGE");
    expect((await stat(join(s.workspace, "f.txt", "video.bin"))).size).toBe(SIX_MB);

    const done = await rewind(s.store, s.id, { toSequence: s.target, allowUnrecoverable: true });
    expect(done.unrecoverable).toEqual(["f.txt/video.bin"]);
    expect(await readFile(join(s.workspace, "f.txt"), "utf8")).toBe("v1");
    // What could be kept was kept: the undo brings back the folder and its small file.
    await undoRewind(s.store, s.id);
    expect(await readFile(join(s.workspace, "f.txt", "notes.md"), "utf8")).toBe("small");
  });

  it("a single file grown past 6 MB, which the rewind would overwrite, is refused the same way", async () => {
    const s = await captured(["f.txt"], async (ws) => {
      await writeFile(join(ws, "f.txt"), Buffer.alloc(SIX_MB, 1));
    });
    expect(await codeOf(rewind(s.store, s.id, { toSequence: s.target }))).toBe("UNRECOVERABLE_CHANGE");
    expect((await stat(join(s.workspace, "f.txt"))).size).toBe(SIX_MB);
    // keepUndo: 0 asks for a final rewind: nothing is kept for anyone, so nothing needs allowing.
    await rewind(s.store, s.id, { toSequence: s.target, keepUndo: 0 });
    expect(await readFile(join(s.workspace, "f.txt"), "utf8")).toBe("v1");
  });

  it("a folder the rewind deletes is copied first, like a file, and the undo brings it back", async () => {
    const s = await captured(["made"], async (ws) => {
      await mkdir(join(ws, "made", "deep"), { recursive: true });
      await writeFile(join(ws, "made", "deep", "a.txt"), "a");
    });
    const report = await rewind(s.store, s.id, { toSequence: s.target });
    expect(report.changes).toEqual([{ path: "made", action: "delete" }]);
    await expect(stat(join(s.workspace, "made"))).rejects.toThrow();
    await undoRewind(s.store, s.id);
    expect(await readFile(join(s.workspace, "made", "deep", "a.txt"), "utf8")).toBe("a");
  });
});

describe("agent-tape rewind and unrecoverable content", () => {
  it("the dry run lists it, the rewind refuses (exit 1), --allow-unrecoverable goes ahead and says so", async () => {
    const s = await captured(["f.txt"], async (ws) => {
      await writeFile(join(ws, "f.txt"), Buffer.alloc(SIX_MB, 1));
    });
    await s.store.close();
    const args = ["rewind", s.id, "--to", String(s.target), ...cliStore(s.root)];
    const dry = await cli([...args, "--dry-run"]);
    expect(dry.stdout).toContain("Would be lost for good (no copy kept for undo; needs --allow-unrecoverable):");
    expect(dry.stdout).toContain("  f.txt (too_large)");
    const refused = await cli(args);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("UNRECOVERABLE_CHANGE");
    expect((await stat(join(s.workspace, "f.txt"))).size).toBe(SIX_MB);
    const allowed = await cli([...args, "--allow-unrecoverable"]);
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toContain("Lost for good");
    expect(await readFile(join(s.workspace, "f.txt"), "utf8")).toBe("v1");
  });
});
