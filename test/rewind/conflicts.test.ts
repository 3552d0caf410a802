import { readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, isAgentTapeError, rewind, undoRewind } from "../../src/index.js";
import { expectRejection } from "../helpers/expect-rejection.js";
import { put } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";

/**
 * The agent edits `notes.md` (v0 -> v1) and `other.md` (o0 -> o1) through `around`, then someone edits
 * `notes.md` by hand. A rewind to before the agent's edits would roll the hand edit back with them.
 */
async function handEditAfterAgent() {
  const base = await realpath(await tempDir("agent-tape-conflict-"));
  const workspace = join(base, "ws");
  await put(workspace, "notes.md", "v0\n");
  await put(workspace, "other.md", "o0\n");
  const store = openStore({ root: join(base, "sessions") });
  const checkpoints = new CheckpointStore(store);
  const { id } = await store.create({ workspace });
  await store.append(id, { type: "message", payload: { role: "user", content: "edit both" } });
  const target = 1;
  await checkpoints.around(id, { tool: "edit", paths: ["notes.md", "other.md"], callId: "c1" }, async () => {
    await writeFile(join(workspace, "notes.md"), "v1\n");
    await writeFile(join(workspace, "other.md"), "o1\n");
  });
  await writeFile(join(workspace, "notes.md"), "v1 + a line typed by hand\n");
  const read = (path: string) => readFile(join(workspace, path), "utf8");
  return { store, id, workspace, target, read };
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("a rewind never clobbers what it did not write: a hand edit after the agent's edit", () => {
  it("is refused by default with REWIND_CONFLICT naming the path, and nothing changes", async () => {
    const t = await handEditAfterAgent();
    const lastBefore = (await t.store.get(t.id))!.lastSequence;

    const error = await expectRejection(rewind(t.store, t.id, { toSequence: t.target }), "REWIND_CONFLICT");

    expect(error.message).toContain("notes.md");
    expect(error.conflicts.map((c) => c.path)).toEqual(["notes.md"]);
    expect(await t.read("notes.md")).toBe("v1 + a line typed by hand\n");
    expect(await t.read("other.md")).toBe("o1\n");
    expect((await t.store.get(t.id))!.lastSequence).toBe(lastBefore);
  });

  it("shows the conflict in a dry run, with what changed", async () => {
    const t = await handEditAfterAgent();
    const report = await rewind(t.store, t.id, { toSequence: t.target, dryRun: true });
    expect(report.conflicts).toEqual([
      expect.objectContaining({ path: "notes.md", change: "modified", resolution: "refuse" }),
    ]);
    expect(await t.read("notes.md")).toBe("v1 + a line typed by hand\n");
  });

  it("skips the conflicting path when asked, and rewinds the rest", async () => {
    const t = await handEditAfterAgent();
    const report = await rewind(t.store, t.id, { toSequence: t.target, onConflict: "skip" });
    expect(await t.read("notes.md")).toBe("v1 + a line typed by hand\n");
    expect(await t.read("other.md")).toBe("o0\n");
    expect(report.changes).toEqual([
      { path: "notes.md", action: "skip", reason: "conflict: modified since agent-tape wrote it" },
      { path: "other.md", action: "restore", diff: { unit: "lines", insertions: 1, deletions: 1 } },
    ]);
    expect(report.conflicts!.map((c) => [c.path, c.resolution])).toEqual([["notes.md", "skip"]]);
  });

  it("overwrites it when asked, and undo brings the hand edit back", async () => {
    const t = await handEditAfterAgent();
    const report = await rewind(t.store, t.id, { toSequence: t.target, onConflict: "overwrite" });
    expect(report.conflicts!.map((c) => [c.path, c.resolution])).toEqual([["notes.md", "overwrite"]]);
    expect(await t.read("notes.md")).toBe("v0\n");
    expect(await t.read("other.md")).toBe("o0\n");

    await undoRewind(t.store, t.id);
    expect(await t.read("notes.md")).toBe("v1 + a line typed by hand\n");
    expect(await t.read("other.md")).toBe("o1\n");
  });

  // A confirm step (the CLI's y/N) shows a dry run's conflicts, then overwrites: an edit made while the
  // person read the question is not one they agreed to lose.
  it("overwriteOnly: overwrites the conflicts a dry run showed, refuses one that appeared since", async () => {
    const t = await handEditAfterAgent();
    const shown = (await rewind(t.store, t.id, { toSequence: t.target, dryRun: true })).conflicts!;
    await writeFile(join(t.workspace, "other.md"), "o1 + typed while the question was up\n");

    const error = await expectRejection(
      rewind(t.store, t.id, { toSequence: t.target, onConflict: "overwrite", overwriteOnly: shown }),
      "REWIND_CONFLICT",
    );

    expect(error.conflicts.map((c) => c.path)).toEqual(["other.md"]);
    expect(await t.read("notes.md")).toBe("v1 + a line typed by hand\n");
    expect(await t.read("other.md")).toBe("o1 + typed while the question was up\n");
  });

  it("overwriteOnly: a conflicting file edited again after the dry run is refused too", async () => {
    const t = await handEditAfterAgent();
    const shown = (await rewind(t.store, t.id, { toSequence: t.target, dryRun: true })).conflicts!;
    await writeFile(join(t.workspace, "notes.md"), "edited once more\n");
    const error = await errorOf(
      rewind(t.store, t.id, { toSequence: t.target, onConflict: "overwrite", overwriteOnly: shown }),
    );
    expect(isAgentTapeError(error, "REWIND_CONFLICT"), String(error)).toBe(true);
    expect(await t.read("notes.md")).toBe("edited once more\n");
  });

  it("overwriteOnly: the conflicts shown, unchanged since, are overwritten", async () => {
    const t = await handEditAfterAgent();
    const shown = (await rewind(t.store, t.id, { toSequence: t.target, dryRun: true })).conflicts!;
    const report = await rewind(t.store, t.id, { toSequence: t.target, onConflict: "overwrite", overwriteOnly: shown });
    expect(report.conflicts!.map((c) => [c.path, c.resolution])).toEqual([["notes.md", "overwrite"]]);
    expect(await t.read("notes.md")).toBe("v0\n");
  });

  it("lets a rewind through when nobody touched the files since", async () => {
    const t = await handEditAfterAgent();
    await writeFile(join(t.workspace, "notes.md"), "v1\n"); // the hand edit reverted by hand
    const report = await rewind(t.store, t.id, { toSequence: t.target });
    expect(report.conflicts).toBeUndefined();
    expect(await t.read("notes.md")).toBe("v0\n");
  });

  it("undoRewind refuses too when a file was edited by hand after the rewind", async () => {
    const t = await handEditAfterAgent();
    await writeFile(join(t.workspace, "notes.md"), "v1\n");
    await rewind(t.store, t.id, { toSequence: t.target });
    await writeFile(join(t.workspace, "other.md"), "typed after the rewind\n");

    const error = await errorOf(undoRewind(t.store, t.id));

    expect(isAgentTapeError(error, "REWIND_CONFLICT"), String(error)).toBe(true);
    expect(await t.read("other.md")).toBe("typed after the rewind\n");
    expect(await t.read("notes.md")).toBe("v0\n");
  });
});
