// A rewind intent that cannot be acted on (docs/ARCHITECTURE.md, "Rewind intent", repair): every operation of
// the session refuses it with STORE_TAMPERED, whose message names `repair`. `repair` shows the intent and
// why it does not fit; finishes one that is well formed and fits the tape; discards one only when told to;
// all under the session's lock. The library function and the CLI command.
import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAgentTapeError, repair, rewind } from "../../src/index.js";
import { editedTwoFiles, workspaceTree } from "../helpers/rewind-workspace.js";
import { cli } from "../cli/harness.js";
import { openStore } from "../helpers/fixture.js";

const next = { type: "message", payload: { role: "user", content: "next" } } as const;

async function failure(promise: Promise<unknown>): Promise<any> {
  return promise.then(
    () => new Error("expected a failure"),
    (e: unknown) => e,
  );
}

/** The intent as a crash right after writing it leaves it (copied then, the rewind itself rolled back). */
async function interruptedRewind() {
  const s = await editedTwoFiles("agent-tape-repair-");
  const intentFile = join(s.root, s.id, "records", "rewind-intent.json");
  let intent = "";
  await failure(
    rewind(s.store, s.id, {
      toSequence: s.target,
      onProgress: (step) => {
        if (step !== "intent-written") return;
        intent = readFileSync(intentFile, "utf8");
        throw new Error("killed here");
      },
    }),
  );
  await s.store.close();
  return { ...s, intentFile, intent };
}

describe("repair", () => {
  it("a garbled intent: shown and kept until told to discard it, then the session works again", async () => {
    const s = await interruptedRewind();
    const garbled = JSON.stringify({ ...JSON.parse(s.intent), append: "zzz" });
    await writeFile(s.intentFile, garbled);
    const tree = await workspaceTree(s.workspace);
    const store = openStore({ root: s.root });

    const refused = await failure(store.append(s.id, next));
    expect(isAgentTapeError(refused, "STORE_TAMPERED")).toBe(true);
    expect(refused.message).toContain(`agent-tape repair ${s.id}`);

    const looked = await repair(store, s.id);
    expect(looked.action).toBe("kept");
    expect(looked.intent).toMatchObject({ kind: "rewind", problem: expect.stringMatching(/append/) });
    expect(await readFile(s.intentFile, "utf8")).toBe(garbled);
    expect(isAgentTapeError(await failure(store.append(s.id, next)), "STORE_TAMPERED")).toBe(true);

    const discarded = await repair(store, s.id, { discard: true });
    expect(discarded.action).toBe("discarded");
    expect((await store.append(s.id, next)).type).toBe("message"); // the session takes appends again
    expect(await workspaceTree(s.workspace)).toEqual(tree); // nothing of the workspace touched
  });

  it("a well-formed intent that fits the tape is finished", async () => {
    const s = await interruptedRewind();
    await writeFile(s.intentFile, s.intent);
    const store = openStore({ root: s.root });
    const report = await repair(store, s.id);
    expect(report.action).toBe("finished");
    expect(report.intent).toMatchObject({ kind: "rewind", targetSequence: s.target });
    expect(report.intent!.problem).toBeUndefined();
    expect(await readFile(join(s.workspace, "a.txt"), "utf8")).toBe("a1\n");
    expect((await store.readAll(s.id)).map((e) => e.type)).toEqual(["message", "session_rewind"]);
    expect(await store.backend.listRecords(s.id)).not.toContain("rewind-intent");
  });

  it("no intent: nothing to do", async () => {
    const s = await editedTwoFiles("agent-tape-repair-");
    expect(await repair(s.store, s.id)).toEqual({ sessionId: s.id, action: "none" });
  });

  it("the CLI shows the intent, exits 1 while it is kept, and --discard drops it", async () => {
    const s = await interruptedRewind();
    await writeFile(s.intentFile, "{ not json at all");
    const shown = await cli(["repair", s.id, "--root", s.root]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toMatch(/cannot be acted on/);
    expect(shown.stdout).toContain("--discard");
    const dropped = await cli(["repair", s.id, "--discard", "--root", s.root]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toMatch(/discarded/i);
    const again = await cli(["repair", s.id, "--root", s.root]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/no rewind intent/i);
    const json = JSON.parse((await cli(["repair", s.id, "--json", "--root", s.root])).stdout);
    expect(json).toEqual({ sessionId: s.id, action: "none" });
  });
});
