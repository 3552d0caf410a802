// A rewind left pending by a persistent failure (a file made immutable, EPERM) must
// fail the writers that meet it with a typed REWIND_FAILED naming the cause, never the restore's raw EPERM.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isAgentTapeError, rewind, undoRewind, verify } from "../../src/index.js";
import { editedTwoFiles, sha256, workspaceTree } from "../helpers/rewind-workspace.js";
import { cli } from "../cli/harness.js";
import { openStore } from "../helpers/fixture.js";
import { removeBlob } from "../helpers/blob-files.js";

const immutable: string[] = [];
afterEach(async () => {
  for (const file of immutable.splice(0)) execFileSync("chattr", ["-i", file]);
});

async function failure(promise: Promise<unknown>): Promise<any> {
  return promise.then(
    () => new Error("expected a failure"),
    (e: unknown) => e,
  );
}

describe("a rewind pending after a persistent failure", () => {
  it("writers that meet it get REWIND_FAILED with the EPERM as cause, not a raw EPERM", async () => {
    const { workspace, root, store, id, target } = await editedTwoFiles("agent-tape-pending-");
    // b.txt can be neither restored nor put back: the rewind stays pending.
    execFileSync("chattr", ["+i", join(workspace, "b.txt")]);
    immutable.push(join(workspace, "b.txt"));
    const failed = await failure(rewind(store, id, { toSequence: target }));
    expect(isAgentTapeError(failed, "REWIND_FAILED")).toBe(true);
    expect(failed.rolledBack).toBe(false);

    for (let i = 0; i < 2; i++) {
      const other = openStore({ root });
      const error = await failure(other.append(id, { type: "message", payload: { role: "user", content: "next" } }));
      expect(isAgentTapeError(error, "REWIND_FAILED"), String(error)).toBe(true);
      expect(error.rolledBack).toBe(false);
      expect(error.cause?.code).toBe("EPERM");
    }

    // Readers, in this process and a fresh store, never fail because of it: they read the tape as it is on disk
    // (the log is cut only once the files are done) and report the rewind as pending.
    for (const reader of [store, openStore({ root })]) {
      const info = await reader.get(id);
      expect(info?.pendingRewind?.reason).toMatch(/EPERM|operation not permitted/i);
      expect((await reader.readAll(id)).map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
      expect(await reader.head(id)).toBe(4);
      expect((await reader.list()).find((s) => s.id === id)?.pendingRewind).toBeDefined();
    }
    const shown = await cli(["show", id, "--root", root]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/A rewind of this session is pending: it failed \(.*EPERM/);
  });
});

describe("a writer that cannot finish an interrupted rewind", () => {
  it("rolls it back while the log is untouched, and goes on with its own write", async () => {
    const s = await editedTwoFiles("agent-tape-pending-");
    const treeBefore = await workspaceTree(s.workspace);
    const logBefore = await s.store.readAll(s.id);
    // The intent as a crash right after writing it leaves it: copied at that moment, put back afterwards.
    const intentFile = join(s.root, s.id, "records", "rewind-intent.json");
    let intent = "";
    const failed = await failure(
      rewind(s.store, s.id, {
        toSequence: s.target,
        onProgress: (step) => {
          if (step !== "intent-written") return;
          intent = readFileSync(intentFile, "utf8");
          throw new Error("killed here");
        },
      }),
    );
    expect(failed.rolledBack).toBe(true);
    await writeFile(intentFile, intent);
    // Finishing it cannot work: the bytes a.txt must get back are gone.
    await removeBlob(s.root, s.id, sha256("a1\n"));

    const reader = openStore({ root: s.root });
    expect((await reader.get(s.id))?.pendingRewind?.state).toBe("interrupted");
    const appended = await reader.append(s.id, { type: "message", payload: { role: "user", content: "next" } });
    expect(await workspaceTree(s.workspace)).toEqual(treeBefore);
    expect(await reader.readAll(s.id)).toEqual([...logBefore, appended]);
    expect(await reader.backend.listRecords(s.id)).not.toContain("rewind-intent");
  });

  it("that cannot roll it back either marks it failed: no later writer finishes it", async () => {
    const s = await editedTwoFiles("agent-tape-pending-");
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
    await writeFile(intentFile, intent);
    await removeBlob(s.root, s.id, sha256("a1\n"));
    execFileSync("chattr", ["+i", join(s.workspace, "b.txt")]);
    immutable.push(join(s.workspace, "b.txt"));

    const writer = openStore({ root: s.root });
    const error = await failure(writer.append(s.id, { type: "message", payload: { role: "user", content: "x" } }));
    expect(isAgentTapeError(error, "REWIND_FAILED"), String(error)).toBe(true);
    expect(error.rolledBack).toBe(false);
    const marked = JSON.parse(await readFile(intentFile, "utf8"));
    expect(marked.failed.reason).toMatch(/interrupted, then finishing it failed/);
    expect((await writer.get(s.id))?.pendingRewind?.state).toBe("failed");
    const health = await verify(writer, s.id);
    expect(health.problems).toContainEqual(
      expect.objectContaining({ kind: "intent_pending", message: expect.stringContaining("rolls it back") }),
    );

    // Its before-state bytes removed by hand: it can no longer be rolled back, and is not finished instead.
    execFileSync("chattr", ["-i", join(s.workspace, "b.txt")]);
    immutable.splice(0);
    await removeBlob(s.root, s.id, sha256("b2\n"));
    // A few small before-blobs also ride in the intent (src/rewind/undo-in-intent.ts): removed from there too.
    const carried = JSON.parse(await readFile(intentFile, "utf8"));
    carried.undoBlobs = carried.undoBlobs?.filter((b: { hash: string }) => b.hash !== sha256("b2\n"));
    await writeFile(intentFile, JSON.stringify(carried));
    const tree = await workspaceTree(s.workspace);
    const stuck = await failure(writer.append(s.id, { type: "message", payload: { role: "user", content: "x" } }));
    expect(isAgentTapeError(stuck, "REWIND_FAILED"), String(stuck)).toBe(true);
    expect(stuck.message).toContain("put the files back by hand");
    expect(await workspaceTree(s.workspace)).toEqual(tree);
  });
});

describe("an undo that fails", () => {
  it("is rolled back: REWIND_FAILED, the files and the log as after the rewind, no intent", async () => {
    const s = await editedTwoFiles("agent-tape-pending-");
    await rewind(s.store, s.id, { toSequence: s.target });
    const treeRewound = await workspaceTree(s.workspace);
    const logRewound = await s.store.readAll(s.id);
    const error = await failure(
      undoRewind(s.store, s.id, {
        onProgress: (step) => {
          if (step === "files-restored") throw new Error("progress bar crashed");
        },
      }),
    );
    expect(isAgentTapeError(error, "REWIND_FAILED"), String(error)).toBe(true);
    expect(error.rolledBack).toBe(true);
    expect(await workspaceTree(s.workspace)).toEqual(treeRewound);
    expect(await s.store.readAll(s.id)).toEqual(logRewound);
    expect(await s.store.backend.listRecords(s.id)).not.toContain("rewind-intent");
    await undoRewind(s.store, s.id); // and it can be undone still, once nothing throws
  });
});
