import { readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, isAgentTapeError, rewind, undoRewind } from "../../src/index.js";
import { put } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";

/** A session whose agent edited `a.txt` (v0 -> v1) after event #1; the rewind target is #1. */
async function editedSession() {
  const base = await realpath(await tempDir("agent-tape-head-"));
  const workspace = join(base, "ws");
  await put(workspace, "a.txt", "v0\n");
  const store = openStore({ root: join(base, "sessions") });
  const { id } = await store.create({ workspace });
  await store.append(id, { type: "message", payload: { role: "user", content: "edit" } });
  await new CheckpointStore(store).around(id, { tool: "edit", paths: ["a.txt"], callId: "c1" }, async () => {
    await writeFile(join(workspace, "a.txt"), "v1\n");
  });
  const head = async () => (await store.get(id))!.lastSequence;
  const read = () => readFile(join(workspace, "a.txt"), "utf8");
  return { store, id, workspace, head, read };
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("a rewind or undo decided at one head is refused once the head has moved", () => {
  it("rewind: SEQUENCE_CONFLICT naming both heads, and neither files nor the tape change", async () => {
    const t = await editedSession();
    const shown = await t.head();
    await t.store.append(t.id, { type: "message", payload: { role: "user", content: "appended meanwhile" } });
    const moved = await t.head();

    const error = await errorOf(rewind(t.store, t.id, { toSequence: 1, expectedLastSequence: shown }));

    expect(isAgentTapeError(error, "SEQUENCE_CONFLICT"), String(error)).toBe(true);
    expect(error).toMatchObject({ expected: shown, actual: moved });
    expect(await t.read()).toBe("v1\n");
    expect(await t.head()).toBe(moved);
  });

  it("rewind: goes ahead when the head is the one expected, and its report names the head it planned at", async () => {
    const t = await editedSession();
    const shown = await t.head();
    const preview = await rewind(t.store, t.id, { toSequence: 1, dryRun: true });
    expect(preview.lastSequence).toBe(shown);

    const report = await rewind(t.store, t.id, { toSequence: 1, expectedLastSequence: preview.lastSequence });

    expect(report.markerSequence).toBe(shown + 1);
    expect(await t.read()).toBe("v0\n");
  });

  it("undoRewind: SEQUENCE_CONFLICT when the head is not the rewind marker it was decided at", async () => {
    const t = await editedSession();
    const { markerSequence } = await rewind(t.store, t.id, { toSequence: 1, mode: "files" });
    // Decided at the head before the rewind: the rewind marker since is not what the caller saw.
    const error = await errorOf(undoRewind(t.store, t.id, { expectedLastSequence: markerSequence! - 1 }));

    expect(isAgentTapeError(error, "SEQUENCE_CONFLICT"), String(error)).toBe(true);
    expect(await t.read()).toBe("v0\n");
    expect(await t.head()).toBe(markerSequence);

    const undone = await undoRewind(t.store, t.id, { expectedLastSequence: markerSequence! });
    expect(undone.undoneMarker).toBe(markerSequence);
    expect(await t.read()).toBe("v1\n");
  });

  it("refuses an expected head that is not a non-negative integer, before anything", async () => {
    const t = await editedSession();
    for (const bad of [-1, 1.5, Number.NaN])
      expect(
        isAgentTapeError(
          await errorOf(rewind(t.store, t.id, { toSequence: 1, expectedLastSequence: bad })),
          "INVALID_ARGUMENT",
        ),
      ).toBe(true);
    expect(await t.read()).toBe("v1\n");
  });
});
