import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rewind, undoRewind, type RewindPayload } from "../../src/index.js";
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

describe("a rewind's and an undo's marker hold each path once, its hashes compact (docs/format.md)", () => {
  it("costs at most 200 bytes per path in the log, for a rewind and for its undo", async () => {
    const { workspace, root, store, checkpoints } = await workspaceWithStore();
    const files = 300;
    const paths = Array.from({ length: files }, (_, i) => pathOf(i));
    for (const [i, path] of paths.entries()) await put(workspace, path, `export const v${i} = 1;\n`);
    const { id } = await store.create({ workspace });
    const target = (await store.append(id, { type: "message", payload: { role: "user", content: "go" } })).sequence;
    await checkpoints.around(id, { tool: "edit", paths }, async () => {
      for (const [i, path] of paths.entries()) await writeFile(join(workspace, path), `export const v${i} = 2;\n`);
    });

    const report = await rewind(store, id, { toSequence: target, mode: "files" });
    expect(report.filesRestored).toBe(files);
    await undoRewind(store, id);

    const markers = (await logLines(root, id)).filter((line) => line.type === "session_rewind");
    expect(markers).toHaveLength(2);
    const perPath = markers.map((line) => Buffer.byteLength(line.text) / files);
    // 360-400 bytes a path before: the path three times, two hashes in hex, every key spelled out.
    for (const bytes of perPath) expect(bytes).toBeLessThanOrEqual(200);

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
