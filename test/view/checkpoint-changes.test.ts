// What each checkpoint changed (docs/ARCHITECTURE.md, "Session view"), on the rewind story, whose
// every edit is known: five edits of one file, a file created, one deleted, a chmod, a folder removed.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DIFF_LIMITS, checkpointChanges, rewind } from "../../src/index.js";
import { tellTheStory as story } from "../helpers/rewind-story.js";

const lines = (insertions: number, deletions: number) => ({ unit: "lines", insertions, deletions });

describe("checkpointChanges", () => {
  it("pairs each before-snapshot with the next snapshot of its path, or the workspace now", async () => {
    const s = await story();
    const all = await checkpointChanges(s.store, s.id, { patches: true });
    expect(all.map((c) => [c.tool, c.callId ?? null])).toEqual([
      ["edit_file", null],
      ["edit_file", "edit-1"],
      ["edit_file", "edit-2"],
      ["edit_file", "edit-3"],
      ["edit_file", "edit-4"],
      ["edit_file", "edit-5"],
      ["write_file", null],
      ["delete_file", null],
      ["chmod", null],
      ["rm_rf", null],
    ]);
    const checkpointSequences = s.eventsBefore.filter((e) => e.type === "session_checkpoint").map((e) => e.sequence);
    expect(all.map((c) => c.sequence)).toEqual(checkpointSequences);

    // draft -> v0 (read from the next checkpoint), then v(n-1) -> vn; the last one against the workspace.
    for (const c of all.slice(0, 6))
      expect(c.files).toEqual([
        expect.objectContaining({ path: "src/app/main.ts", change: "modified", diff: lines(1, 1) }),
      ]);
    expect(all[5]!.files[0]!.patch).toBe("--- a/src/app/main.ts\n+++ b/src/app/main.ts\n@@ -1,1 +1,1 @@\n-v4\n+v5\n");
    expect(all[6]!.files).toEqual([
      expect.objectContaining({ path: "src/app/new.ts", change: "created", before: "absent", after: "file" }),
    ]);
    expect(all[6]!.files[0]!.diff).toEqual(lines(1, 0));
    expect(all[7]!.files).toEqual([
      expect.objectContaining({ path: "docs/guide/old.md", change: "deleted", diff: lines(0, 1) }),
    ]);
    expect(all[8]!.files).toEqual([
      expect.objectContaining({ path: "bin/run.sh", change: "modified", diff: lines(0, 0) }), // the mode only
    ]);
    expect(all[9]!.files.map((f) => [f.path, f.change, f.before, f.diff ?? null])).toEqual([
      ["vendor", "deleted", "folder", null],
      ["vendor/pkg", "deleted", "folder", null],
      ["vendor/pkg/lib", "deleted", "folder", null],
      ["vendor/pkg/lib/index.js", "deleted", "file", lines(0, 1)],
      ["vendor/pkg/package.json", "deleted", "file", lines(0, 1)],
    ]);
    expect(all[9]!.totals).toEqual({ lines: { insertions: 0, deletions: 2 }, bytes: { insertions: 0, deletions: 0 } });
  });

  it('after a "files" rewind, the last edits end at the marker\'s undo snapshot, not the workspace', async () => {
    const s = await story();
    await rewind(s.store, s.id, { toSequence: s.target, mode: "files" });
    await writeFile(join(s.workspace, "src/app/main.ts"), "edited by hand\n");
    const all = await checkpointChanges(s.store, s.id);
    expect(all[5]!.files[0]).toMatchObject({ change: "modified", diff: lines(1, 1) }); // v4 -> v5, not -> the hand edit
    expect(all[6]!.files[0]).toMatchObject({ path: "src/app/new.ts", change: "created" });
  });

  it("a tampered path is 'unknown', and nothing outside the workspace is read", async () => {
    const s = await story();
    await writeFile(join(s.outside, "secret.txt"), "do not read\n");
    await s.store.append(s.id, {
      type: "session_checkpoint",
      payload: { tool: "evil", workspace: s.workspace, files: [{ path: "../outside/secret.txt", kind: "absent" }] },
    });
    const last = (await checkpointChanges(s.store, s.id, { patches: true })).at(-1)!;
    expect(last.files).toEqual([
      {
        path: "../outside/secret.txt",
        change: "unknown",
        before: "absent",
        after: "unknown",
        reason: "outside_workspace",
      },
    ]);
  });

  it("a binary file and one past the diff bound are counted in bytes; one left as it was counts 0", async () => {
    const s = await story();
    const over = DIFF_LIMITS.maxBytes + 1;
    const big = Buffer.alloc(over, 0x61);
    await writeFile(join(s.workspace, "logo.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1]));
    await writeFile(join(s.workspace, "big.log"), big);
    await writeFile(join(s.workspace, "same.log"), big);
    await writeFile(join(s.workspace, "same.png"), Buffer.from([0, 1, 2]));
    const paths = ["logo.png", "big.log", "same.log", "same.png"];
    await s.checkpoints.around(s.id, { tool: "write", paths }, async () => {
      await writeFile(join(s.workspace, "logo.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]));
      await writeFile(join(s.workspace, "big.log"), Buffer.concat([big, Buffer.from("b\n")]));
      await writeFile(join(s.workspace, "same.log"), big); // written again, the same bytes
      await writeFile(join(s.workspace, "same.png"), Buffer.from([0, 1, 2]));
    });
    const last = (await checkpointChanges(s.store, s.id, { patches: true })).at(-1)!;
    expect(last.files).toEqual([
      {
        path: "big.log",
        change: "modified",
        before: "file",
        after: "file",
        diff: { unit: "bytes", insertions: over + 2, deletions: over, reason: "too_large" },
      },
      {
        path: "logo.png",
        change: "modified",
        before: "file",
        after: "file",
        diff: { unit: "bytes", insertions: 8, deletions: 6, reason: "binary" },
      },
      // Nothing went in or out: no bytes to count, whatever their size or kind.
      {
        path: "same.log",
        change: "unchanged",
        before: "file",
        after: "file",
        diff: { unit: "bytes", insertions: 0, deletions: 0, reason: "too_large" },
      },
      {
        path: "same.png",
        change: "unchanged",
        before: "file",
        after: "file",
        diff: { unit: "bytes", insertions: 0, deletions: 0, reason: "binary" },
      },
    ]);
    expect(last.totals).toEqual({
      lines: { insertions: 0, deletions: 0 },
      bytes: { insertions: over + 10, deletions: over + 6 },
    });
  });

  it("a path not captured is 'unknown' with the capture's reason", async () => {
    const s = await story();
    await s.store.append(s.id, {
      type: "session_checkpoint",
      payload: {
        tool: "big",
        workspace: s.workspace,
        files: [{ path: "README.md", kind: "skipped", reason: "too_large" }],
      },
    });
    const last = (await checkpointChanges(s.store, s.id)).at(-1)!;
    expect(last.files[0]).toMatchObject({ change: "unknown", reason: "not captured (too_large)" });
  });
});
