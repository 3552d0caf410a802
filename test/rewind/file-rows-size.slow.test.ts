import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  rewind,
  undoRewind,
  type CheckpointPayload,
  type FileStatesPayload,
  type RewindPayload,
} from "../../src/index.js";
import { put } from "../helpers/rewind-workspace.js";
import { workspaceWithStore } from "../helpers/fixture.js";

/** A path the length of a real project's (`src/module07/file0123.ts`, 24 bytes). */
const pathOf = (i: number) => `src/module${String(i % 10).padStart(2, "0")}/file${String(i).padStart(4, "0")}.ts`;

/** Lines of the log, by event type. */
async function logLines(root: string, id: string): Promise<{ type: string; text: string }[]> {
  const text = await readFile(join(root, id, "events.jsonl"), "utf8");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => ({ type: (JSON.parse(line) as { type: string }).type, text: line }));
}

const FILES = 300;

/** A session whose one tool call edited FILES files, after a message (`target`, a rewind goes back to it). */
async function editedSession() {
  const { workspace, root, store, checkpoints } = await workspaceWithStore();
  const paths = Array.from({ length: FILES }, (_, i) => pathOf(i));
  for (const [i, path] of paths.entries()) await put(workspace, path, `export const v${i} = 1;\n`);
  const { id } = await store.create({ workspace });
  const target = (await store.append(id, { type: "message", payload: { role: "user", content: "go" } })).sequence;
  await checkpoints.around(id, { tool: "edit", paths }, async () => {
    for (const [i, path] of paths.entries()) await writeFile(join(workspace, path), `export const v${i} = 2;\n`);
  });
  return { root, store, id, paths, target };
}

describe("payloads that list files hold each path once, by what it adds, hashes compact (docs/format.md)", () => {
  it("a checkpoint's line costs at most 100 bytes a path, and the tool's file states at most 90", async () => {
    const { root, store, id, paths } = await editedSession();
    const files = FILES;
    const lines = await logLines(root, id);
    const [checkpoint] = lines.filter((line) => line.type === "session_checkpoint");
    const [states] = lines.filter((line) => line.type === "session_file_states");
    // 90 and 83 measured; 163 and 138 bytes a path before: every key spelled out, the path in full, the hash in hex
    expect(Buffer.byteLength(checkpoint!.text) / files).toBeLessThanOrEqual(100);
    expect(Buffer.byteLength(states!.text) / files).toBeLessThanOrEqual(90);
    const read = await store.readAll(id);
    const snapshot = read.find((e) => e.type === "session_checkpoint")!.payload as CheckpointPayload;
    expect(snapshot.files).toHaveLength(files);
    expect(snapshot.files.find((f) => f.path === pathOf(7))).toMatchObject({
      kind: "blob",
      bytes: Buffer.byteLength("export const v7 = 1;\n"),
      mode: 0o644,
    });
    const after = read.find((e) => e.type === "session_file_states")!.payload as FileStatesPayload;
    expect(after.files.map((f) => f.path).sort()).toEqual([...paths].sort());
  });

  it("a marker costs at most 180 bytes per path in the log, for a rewind and for its undo", async () => {
    const { root, store, id, paths, target } = await editedSession();
    const files = FILES;

    const report = await rewind(store, id, { toSequence: target, mode: "files" });
    expect(report.filesRestored).toBe(files);
    await undoRewind(store, id);

    const markers = (await logLines(root, id)).filter((line) => line.type === "session_rewind");
    expect(markers).toHaveLength(2);
    const perPath = markers.map((line) => Buffer.byteLength(line.text) / files);
    // 175 measured; 360-400 bytes a path before rows, 190 with a table of whole paths.
    for (const bytes of perPath) expect(bytes).toBeLessThanOrEqual(180);

    // Read back through the store, the markers are what they always were: every path's record in full.
    const read = await store.readAll(id);
    const [rewound, undone] = read.filter((e) => e.type === "session_rewind").map((e) => e.payload as RewindPayload);
    expect(rewound!.changes).toHaveLength(files);
    expect(rewound!.undo!.files).toHaveLength(files);
    expect(rewound!.undo!.files[0]).toMatchObject({
      path: pathOf(0),
      kind: "blob",
      bytes: Buffer.byteLength("export const v0 = 1;\n"),
      mode: 0o644,
    });
    expect(rewound!.wrote!.files[0]).toMatchObject({ path: pathOf(0), kind: "file" });
    expect(undone!.undoOf).toBeGreaterThan(0);
    expect(undone!.changes.map((c) => c.path).sort()).toEqual([...paths].sort());
  });
});
