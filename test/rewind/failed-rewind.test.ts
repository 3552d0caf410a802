// A rewind that fails part way (after files were restored, before the log was cut) must leave
// the session exactly as before it — files, log, no intent — and throw REWIND_FAILED with the cause; an append
// the caller makes at once on the same store must not take the marker's number or make the rewind look done.
import { execFileSync } from "node:child_process";
import { realpath, mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CheckpointStore, isAgentTapeError, rewind, undoRewind } from "../../src/index.js";
import { put, workspaceTree } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const immutable: string[] = [];
afterEach(async () => {
  for (const folder of immutable.splice(0)) execFileSync("chattr", ["-i", folder]);
});

/** a.txt and b.txt edited and sub/c.txt deleted by one tool call after the target; the rewind would put all back. */
async function editedWorkspace() {
  const base = await realpath(await tempDir("agent-tape-failed-rewind-"));
  const workspace = join(base, "ws");
  await mkdir(workspace);
  await put(workspace, "a.txt", "a1\n");
  await put(workspace, "b.txt", "b1\n");
  await put(workspace, "sub/c.txt", "c1\n");
  const root = join(base, "sessions");
  const store = openStore({ root });
  const checkpoints = new CheckpointStore(store);
  const { id } = await store.create({ workspace });
  const say = async (content: string) =>
    (await store.append(id, { type: "message", payload: { role: "user", content } })).sequence;
  const target = await say("start");
  await checkpoints.around(id, { tool: "edit", paths: ["a.txt", "b.txt", "sub/c.txt"] }, async () => {
    await put(workspace, "a.txt", "a2\n");
    await put(workspace, "b.txt", "b2\n");
    await rm(join(workspace, "sub/c.txt"));
  });
  await say("later");
  return { root, workspace, store, id, target, say };
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error("expected the rewind to fail, and it succeeded"),
    (e: unknown) => e,
  );
}

const attacks = {
  "onProgress throws once the files are restored": async (s: Awaited<ReturnType<typeof editedWorkspace>>) =>
    failure(
      rewind(s.store, s.id, {
        toSequence: s.target,
        onProgress: (step) => {
          if (step === "files-restored") throw new Error("progress bar crashed");
        },
      }),
    ),
  "a folder cannot be written half way through restoring the files": async (
    s: Awaited<ReturnType<typeof editedWorkspace>>,
  ) =>
    failure(
      rewind(s.store, s.id, {
        toSequence: s.target,
        onProgress: (step) => {
          // sub/c.txt cannot be put back (EPERM, even for root), while a.txt and b.txt can. Undoing the
          // rewind needs nothing written in sub/: c.txt was absent before it. (A blob removed here no longer
          // fails the restore: it writes the bytes its plan read and verified.)
          if (step !== "intent-written") return;
          execFileSync("chattr", ["+i", join(s.workspace, "sub")]);
          immutable.push(join(s.workspace, "sub"));
        },
      }),
    ),
};

describe("a rewind that fails", () => {
  for (const [name, attack] of Object.entries(attacks)) {
    it(`${name}: rolled back, REWIND_FAILED, and an append at once keeps its own number`, async () => {
      const s = await editedWorkspace();
      const treeBefore = await workspaceTree(s.workspace);
      const logBefore = await s.store.readAll(s.id);
      const error = await attack(s);
      const appended = await s.say("the rewind failed"); // what a caller does at once: log the failure

      const fresh = openStore({ root: s.root }); // another process, later: runs recovery
      const log = await fresh.readAll(s.id);
      const tree = await workspaceTree(s.workspace);
      const records = await fresh.backend.listRecords(s.id);
      const undo = await undoRewind(fresh, s.id).then(
        () => "undone",
        (e: unknown) => (isAgentTapeError(e) ? e.code : String(e)),
      );
      console.log(
        `${name}: error ${isAgentTapeError(error) ? error.code : String(error)}; files ${JSON.stringify(tree)}; ` +
          `log ${log.length} events (last ${log.at(-1)?.type} #${log.at(-1)?.sequence}), ` +
          `records ${records}, undo: ${undo}`,
      );
      expect(isAgentTapeError(error, "REWIND_FAILED"), String(error)).toBe(true);
      expect((error as Error).cause).toBeDefined();
      expect(tree).toEqual(treeBefore);
      expect(log).toEqual([...logBefore, expect.objectContaining({ sequence: appended })]);
      expect(appended).toBe(logBefore.at(-1)!.sequence + 1);
      expect(records.filter((r) => r === "rewind-intent")).toEqual([]);
      expect(undo).toBe("NOTHING_TO_UNDO");
    });
  }
});
