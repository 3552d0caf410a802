// Diff figures in rewind and undo reports (docs/ARCHITECTURE.md, "Diffs"), against edits whose
// counts are known by construction: text edits, a binary file, a file over the diff bound, and a
// file too large even to be read for undo.
import { chmod, mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, DIFF_LIMITS, rewind, undoRewind, type RewindPayload } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

/** `n` numbered lines, "line 1\n" … */
const numbered = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `line ${from + i}\n`).join("");

/** A session over a workspace with files `before`, a checkpointed edit to `after`, and the target before it. */
async function edited(before: Record<string, string | Buffer>, after: Record<string, string | Buffer | null>) {
  const base = await realpath(await tempDir("agent-tape-diffs-"));
  const workspace = join(base, "ws");
  await mkdir(workspace);
  for (const [path, content] of Object.entries(before)) await writeFile(join(workspace, path), content);
  const store = openStore({ root: join(base, "sessions") });
  const checkpoints = new CheckpointStore(store, { maxFileBytes: 8 * 1024 * 1024 });
  const { id } = await store.create({ workspace });
  const target = (await store.append(id, { type: "message", payload: { role: "user", content: "go" } })).sequence;
  await checkpoints.around(id, { tool: "edit", paths: Object.keys(after) }, async () => {
    for (const [path, content] of Object.entries(after)) {
      if (content === null) await import("node:fs/promises").then((fs) => fs.rm(join(workspace, path)));
      else await writeFile(join(workspace, path), content);
    }
  });
  const checkpointed = (paths: string[], edit: () => Promise<unknown>) =>
    checkpoints.around(id, { tool: "edit", paths }, edit);
  return { store, id, target, workspace, checkpointed };
}

describe("a rewind's report counts what each path changes", () => {
  it("text edits in lines: an edit, a new file, a deleted file, and the totals; dry run and rewind agree", async () => {
    const s = await edited(
      { "edit.txt": numbered(10), "gone.txt": numbered(4) },
      {
        // line 3 replaced, lines 8-9 removed, two lines appended: the rewind puts back 3, takes out 3.
        "edit.txt": numbered(10).replace("line 3\n", "line three\n").replace("line 8\nline 9\n", "") + "x\ny\n",
        "new.txt": numbered(7),
        "gone.txt": null,
      },
    );
    const dry = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true });
    expect(dry.changes).toEqual([
      { path: "edit.txt", action: "restore", diff: { unit: "lines", insertions: 3, deletions: 3 } },
      { path: "gone.txt", action: "restore", diff: { unit: "lines", insertions: 4, deletions: 0 } },
      { path: "new.txt", action: "delete", diff: { unit: "lines", insertions: 0, deletions: 7 } },
    ]);
    expect(dry.diffTotals).toEqual({ lines: { insertions: 7, deletions: 10 }, bytes: { insertions: 0, deletions: 0 } });

    const done = await rewind(s.store, s.id, { toSequence: s.target });
    expect(done.changes).toEqual(dry.changes);
    expect(done.diffTotals).toEqual(dry.diffTotals);
    // The marker keeps the figures (not the patches): the tape shows what the rewind did.
    const marker = (await s.store.readAll(s.id)).at(-1)!.payload as RewindPayload;
    expect(marker.changes).toEqual(dry.changes);

    const undo = await undoRewind(s.store, s.id, { dryRun: true });
    expect(undo.changes).toEqual([
      { path: "edit.txt", action: "restore", diff: { unit: "lines", insertions: 3, deletions: 3 } },
      { path: "gone.txt", action: "delete", diff: { unit: "lines", insertions: 0, deletions: 4 } },
      { path: "new.txt", action: "restore", diff: { unit: "lines", insertions: 7, deletions: 0 } },
    ]);
  });

  it("a binary file is counted in bytes, whole file in and whole file out", async () => {
    const before = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 4, 5]);
    const after = Buffer.concat([before, Buffer.from([0, 9, 9, 9, 9])]);
    const s = await edited({ "logo.png": before }, { "logo.png": after });
    const report = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true, diffs: true });
    expect(report.changes).toEqual([
      { path: "logo.png", action: "restore", diff: { unit: "bytes", insertions: 10, deletions: 15, reason: "binary" } },
    ]);
    expect(report.diffTotals).toEqual({
      lines: { insertions: 0, deletions: 0 },
      bytes: { insertions: 10, deletions: 15 },
    });
  });

  it("a text file over the diff bound is counted in bytes and gets no patch", async () => {
    const big = "x".repeat(DIFF_LIMITS.maxBytes) + "\n"; // one byte over, in a single line
    const s = await edited({ "big.txt": "small\n", "small.txt": "a\nb\n" }, { "big.txt": big, "small.txt": "a\nB\n" });
    const report = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true, diffs: true });
    expect(report.changes).toEqual([
      {
        path: "big.txt",
        action: "restore",
        diff: { unit: "bytes", insertions: 6, deletions: DIFF_LIMITS.maxBytes + 1, reason: "too_large" },
      },
      {
        path: "small.txt",
        action: "restore",
        diff: { unit: "lines", insertions: 1, deletions: 1 },
        patch: "--- a/small.txt\n+++ b/small.txt\n@@ -1,2 +1,2 @@\n a\n-B\n+b\n",
      },
    ]);
  });

  it("a real rewind and its undo, dry run and real, give each path its figures and totals", async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 4, 5]); // 10 bytes, a NUL: binary
    const pngAfter = Buffer.concat([png, Buffer.from([0, 9, 9, 9, 9])]); // 15 bytes
    const big = "x".repeat(DIFF_LIMITS.maxBytes) + "\n"; // one byte over the bound
    const s = await edited(
      { "logo.png": png, "big.txt": "small\n", "small.txt": "a\nb\n" },
      { "logo.png": pngAfter, "big.txt": big, "small.txt": "a\nB\n" },
    );
    const over = DIFF_LIMITS.maxBytes + 1;
    const rewound = [
      {
        path: "big.txt",
        action: "restore",
        diff: { unit: "bytes", insertions: 6, deletions: over, reason: "too_large" },
      },
      { path: "logo.png", action: "restore", diff: { unit: "bytes", insertions: 10, deletions: 15, reason: "binary" } },
      {
        path: "small.txt",
        action: "restore",
        diff: { unit: "lines", insertions: 1, deletions: 1 },
        patch: "--- a/small.txt\n+++ b/small.txt\n@@ -1,2 +1,2 @@\n a\n-B\n+b\n",
      },
    ];
    const rewoundTotals = { lines: { insertions: 1, deletions: 1 }, bytes: { insertions: 16, deletions: over + 15 } };
    const dry = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true, diffs: true });
    expect(dry).toMatchObject({ changes: rewound, diffTotals: rewoundTotals });
    const done = await rewind(s.store, s.id, { toSequence: s.target, diffs: true });
    expect(done).toMatchObject({ dryRun: false, changes: rewound, diffTotals: rewoundTotals });
    const marker = (await s.store.readAll(s.id)).at(-1)!.payload as RewindPayload;
    expect(marker.changes).toEqual(rewound.map(({ patch: _patch, ...change }) => change)); // figures, no patch

    // The undo, the other way round: from the files as the rewind left them back to the edit's.
    const undone = [
      {
        path: "big.txt",
        action: "restore",
        diff: { unit: "bytes", insertions: over, deletions: 6, reason: "too_large" },
      },
      { path: "logo.png", action: "restore", diff: { unit: "bytes", insertions: 15, deletions: 10, reason: "binary" } },
      {
        path: "small.txt",
        action: "restore",
        diff: { unit: "lines", insertions: 1, deletions: 1 },
        patch: "--- a/small.txt\n+++ b/small.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n",
      },
    ];
    const undoneTotals = { lines: { insertions: 1, deletions: 1 }, bytes: { insertions: over + 15, deletions: 16 } };
    const undoDry = await undoRewind(s.store, s.id, { dryRun: true, diffs: true });
    expect(undoDry).toMatchObject({ dryRun: true, changes: undone, diffTotals: undoneTotals });
    const undo = await undoRewind(s.store, s.id, { diffs: true });
    expect(undo).toMatchObject({ dryRun: false, changes: undone, diffTotals: undoneTotals });
    const undoMarker = (await s.store.readAll(s.id)).at(-1)!.payload as RewindPayload;
    expect(undoMarker.changes).toEqual(undone.map(({ patch: _patch, ...change }) => change));
  });

  it("a binary file whose mode alone changed inserts and deletes no byte", async () => {
    const s = await edited({ "tool.bin": Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1]) }, {});
    await s.checkpointed(["tool.bin"], () => chmod(join(s.workspace, "tool.bin"), 0o755));
    const report = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true });
    expect(report.changes).toEqual([
      { path: "tool.bin", action: "restore", diff: { unit: "bytes", insertions: 0, deletions: 0, reason: "binary" } },
    ]);
  });

  it("a file over the line bound is counted in bytes", async () => {
    const many = numbered(DIFF_LIMITS.maxLines + 1);
    const s = await edited({ "many.txt": numbered(2) }, { "many.txt": many });
    const report = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true });
    expect(report.changes[0]!.diff).toEqual({
      unit: "bytes",
      insertions: numbered(2).length,
      deletions: Buffer.byteLength(many),
      reason: "too_large",
    });
  });

  it("a file too large to be read for undo is measured, not read, and counted in bytes", async () => {
    const s = await edited({ "huge.log": "start\n" }, { "huge.log": Buffer.alloc(3 * 1024 * 1024, 0x61) });
    const report = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true, maxFileBytes: 1024 * 1024 });
    expect(report.changes).toEqual([
      {
        path: "huge.log",
        action: "restore",
        diff: { unit: "bytes", insertions: 6, deletions: 3 * 1024 * 1024, reason: "too_large" },
        // Not read, so not kept for undo either: the rewind would lose it for good (unrecoverable.test.ts).
        unrecoverable: [expect.objectContaining({ path: "huge.log", reason: "too_large" })],
      },
    ]);
  });

  it("with diffs: true each text change carries its unified diff, from the file now to the result", async () => {
    const s = await edited({ "a.txt": "one\ntwo\n" }, { "a.txt": "one\n2\n", "b.txt": "new\n" });
    const report = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true, diffs: true });
    expect(report.changes.map((c) => c.patch)).toEqual([
      "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-2\n+two\n",
      "--- a/b.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-new\n",
    ]);
    const plain = await rewind(s.store, s.id, { toSequence: s.target, dryRun: true });
    expect(plain.changes.some((c) => "patch" in c)).toBe(false);
  });
});
