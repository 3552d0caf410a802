import { readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, rewind } from "../../src/index.js";
import { expectRejection } from "../helpers/expect-rejection.js";
import { put } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";

/**
 * Two agent sessions on one checkout, each in its own store (as two processes would be), take turns
 * editing `shared.txt` (3 rounds each, A first), and each its own file too. B edits last.
 */
async function twoSessionsTakingTurns() {
  const base = await realpath(await tempDir("agent-tape-two-sessions-"));
  const workspace = join(base, "ws");
  await put(workspace, "shared.txt", "start\n");
  await put(workspace, "a.txt", "a0\n");
  await put(workspace, "b.txt", "b0\n");
  const open = async (name: string) => {
    const store = openStore({ root: join(base, "sessions") });
    const { id } = await store.create({ workspace, title: name });
    await store.append(id, { type: "message", payload: { role: "user", content: `session ${name}` } });
    const checkpoints = new CheckpointStore(store);
    const edit = (round: number) =>
      checkpoints.around(id, { tool: "edit", paths: ["shared.txt", `${name}.txt`] }, async () => {
        await writeFile(join(workspace, "shared.txt"), `${name}${round}\n`);
        await writeFile(join(workspace, `${name}.txt`), `${name}${round}\n`);
      });
    return { store, id, edit, start: 1 };
  };
  const a = await open("a");
  const b = await open("b");
  for (let round = 1; round <= 3; round++) {
    await a.edit(round);
    await b.edit(round);
  }
  const read = (path: string) => readFile(join(workspace, path), "utf8");
  return { a, b, read };
}

describe("two sessions on one folder, taking turns (3 rounds each)", () => {
  it("A's rewind refuses to undo B's later edit of the shared file, and changes nothing", async () => {
    const { a, read } = await twoSessionsTakingTurns();
    const error = await expectRejection(rewind(a.store, a.id, { toSequence: a.start }), "REWIND_CONFLICT");
    expect(error.conflicts).toMatchObject([{ path: "shared.txt", change: "modified" }]);
    expect(await read("shared.txt")).toBe("b3\n");
    expect(await read("a.txt")).toBe("a3\n");
  });

  it("A's rewind to every one of its points, skipping conflicts, never drops B's latest content", async () => {
    const { a, read } = await twoSessionsTakingTurns();
    const points = (await a.store.readAll(a.id)).map((e) => e.sequence).reverse();
    for (const point of points) {
      const report = await rewind(a.store, a.id, { toSequence: point, onConflict: "skip", mode: "files" });
      expect(await read("shared.txt"), `rewind of A to #${point}`).toBe("b3\n");
      expect(await read("b.txt")).toBe("b3\n");
      if (report.changes.some((c) => c.path === "shared.txt"))
        expect(report.changes.find((c) => c.path === "shared.txt")?.action).toBe("skip");
    }
    expect(await read("a.txt")).toBe("a0\n");
  });

  it("B, which wrote last, rewinds its own edits of the shared file back to A's", async () => {
    const { b, read } = await twoSessionsTakingTurns();
    const report = await rewind(b.store, b.id, { toSequence: b.start });
    expect(report.conflicts).toBeUndefined();
    expect(await read("shared.txt")).toBe("a1\n"); // what it was when B first touched it
    expect(await read("b.txt")).toBe("b0\n");
    expect(await read("a.txt")).toBe("a3\n");
  });
});
