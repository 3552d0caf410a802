import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, rewind, type RewindPayload } from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { put } from "../helpers/rewind-workspace.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// An edit saved by another process after the rewind's conflict check and before it replaces the file
// (docs/ARCHITECTURE.md, "Conflicts"). Rounds (test/helpers/rounds.ts): 40 in npm test, 300 in the soak tier.
const ROUNDS = rounds(40, 300);

const children = childrenKilledAfterEach();

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Waits, blocking the event loop (the rewind is paused between two of its steps), until `path` exists. */
function blockUntilExists(path: string, ms: number): void {
  const until = Date.now() + ms;
  while (!existsSync(path) && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
}

describe("an edit saved while a rewind runs (a real process saving between the check and the write)", () => {
  it(`is never lost: it stays in the file, or the undo holds it (${ROUNDS} rounds)`, async () => {
    const base = await realpath(await tempDir("agent-tape-edit-race-"));
    const workspace = join(base, "ws");
    const flags = join(base, "flags");
    await mkdir(flags);
    await put(workspace, "notes.txt", "v0\n");
    const store = openStore({ root: join(base, "sessions") });
    try {
      const { id } = await store.create({ workspace });
      await store.append(id, { type: "message", payload: { role: "user", content: "edit" } });
      await new CheckpointStore(store).around(id, { tool: "edit", paths: ["notes.txt"], callId: "c1" }, () =>
        writeFile(join(workspace, "notes.txt"), "v1\n"),
      );
      const saver = new Child("racing-saver.ts", [join(workspace, "notes.txt"), flags]);
      children.push(saver);

      const lost: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // As the agent left it; the check may still call it a conflict (an earlier round's save left in place, or
        // on the old code its v0): "overwrite" agrees to those, never to a save made after the check.
        await writeFile(join(workspace, "notes.txt"), "v1\n");
        const save = `save ${round}\n`;
        const report = await rewind(store, id, {
          toSequence: 1,
          mode: "files",
          onConflict: "overwrite",
          onProgress: (step) => {
            if (step !== "intent-written") return;
            saver.process.stdin!.write(`save ${round}\n`);
            blockUntilExists(join(flags, `saved-${round}`), 5000);
          },
        });
        expect(existsSync(join(flags, `saved-${round}`))).toBe(true);
        const now = await readFile(join(workspace, "notes.txt"), "utf8");
        let kept = false;
        for await (const event of store.read(id, { fromSequence: report.markerSequence! }))
          kept ||= ((event.payload as RewindPayload).undo?.files ?? []).some(
            (f) => f.path === "notes.txt" && f.kind === "blob" && f.blob === sha256(save),
          );
        if (now !== save && !kept) lost.push(`round ${round}: file ${JSON.stringify(now)}, save not kept for undo`);
        else if (now === save)
          expect(report.changes).toContainEqual(
            expect.objectContaining({
              path: "notes.txt",
              action: "skip",
              reason: "conflict: changed during the rewind",
            }),
          );
      }
      expect(lost).toEqual([]);
      saver.endInput();
      expect((await saver.done()).stderr).toBe("");
    } finally {
      await store.close();
    }
  }, 240_000);
});
