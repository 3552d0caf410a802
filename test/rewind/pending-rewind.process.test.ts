// A rewind that failed and could not be rolled back (a file the OS will not let anyone write)
// must not poison the session, nor be applied later behind the back of the caller who saw it fail. Readers in
// any process read the tape as it is on disk, report the rewind as pending and change nothing, before and
// after the cause is fixed; once it is fixed, the next writer rolls the failed rewind back, never forward.
import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isAgentTapeError, rewind } from "../../src/index.js";
import { runChild } from "../helpers/children.js";
import { editedTwoFiles, workspaceTree } from "../helpers/rewind-workspace.js";
import { openStore } from "../helpers/fixture.js";

const immutable: string[] = [];
afterEach(async () => {
  for (const file of immutable.splice(0)) execFileSync("chattr", ["-i", file]);
});

function setImmutable(path: string, on: boolean): void {
  execFileSync("chattr", [on ? "+i" : "-i", path]);
  if (on) immutable.push(path);
  else immutable.splice(immutable.indexOf(path), 1);
}

/** a.txt and b.txt edited by one tool call after the target, then one more message; b.txt made immutable. */
async function failedRewind(keepUndo: number) {
  const { workspace, root, store, id, target } = await editedTwoFiles("agent-tape-pending-process-");
  const treeBefore = await workspaceTree(workspace);
  const logBefore = await store.readAll(id);
  // b.txt can be neither restored nor put back: the rewind fails and cannot be rolled back.
  setImmutable(join(workspace, "b.txt"), true);
  const failed = await rewind(store, id, { toSequence: target, keepUndo }).then(
    () => new Error("expected the rewind to fail"),
    (e: unknown) => e,
  );
  expect(isAgentTapeError(failed, "REWIND_FAILED"), String(failed)).toBe(true);
  expect((failed as { rolledBack?: boolean }).rolledBack).toBe(false);
  return { workspace, root, store, id, treeBefore, logBefore };
}

/** Everything a reader could change: the files, the log's bytes, the side records and the intent's bytes. */
async function onDisk(s: { workspace: string; root: string; id: string }) {
  const session = join(s.root, s.id);
  return {
    tree: await workspaceTree(s.workspace),
    log: await readFile(join(session, "events.jsonl"), "utf8"),
    records: await workspaceTree(join(session, "records")),
  };
}

/** What a reader in a process of its own sees: get, list, head, readAll, conversation, CLI show. */
async function readInAnotherProcess(root: string, id: string) {
  const run = await runChild("read-session.ts", [root, id]);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split("\n").at(-1)!);
}

describe("a rewind that failed and could not be rolled back", () => {
  for (const keepUndo of [1, 0]) {
    const title = "readers elsewhere report it pending and change nothing; once fixed, the next writer rolls it back";
    it(`keepUndo ${keepUndo}: ${title}`, async () => {
      const s = await failedRewind(keepUndo);
      const sequences = s.logBefore.map((e) => `${e.sequence} ${e.type}`);
      const pending = await onDisk(s);
      expect(Object.keys(pending.records)).toContain("rewind-intent.json");

      // Twice: while the cause persists, and once it is fixed but before any writer came. A reader never
      // finishes the rewind (the caller was told it failed), never rolls it back, never fails because of it.
      for (const moment of ["cause persists", "cause fixed"]) {
        if (moment === "cause fixed") setImmutable(join(s.workspace, "b.txt"), false);
        const seen = await readInAnotherProcess(s.root, s.id);
        expect(seen.get.pendingRewind, moment).toEqual({
          state: "failed",
          reason: expect.stringMatching(/EPERM|operation not permitted/i),
        });
        expect(seen.get.lastSequence, moment).toBe(s.logBefore.at(-1)!.sequence);
        expect(seen.listed.pendingRewind, moment).toEqual(seen.get.pendingRewind);
        expect(seen.head, moment).toBe(s.logBefore.at(-1)!.sequence);
        expect(seen.events, moment).toEqual(sequences);
        expect(seen.messages, moment).toBe(2);
        expect(seen.show.code, `${moment}: ${seen.show.stderr}`).toBe(0);
        expect(seen.show.stdout, moment).toMatch(/A rewind of this session is pending: it failed \(.*EPERM/);
        expect(await onDisk(s), moment).toEqual(pending);
      }

      // The next writer (a fresh store: another process, later) rolls the failed rewind back and appends.
      const writer = openStore({ root: s.root });
      const appended = await writer.append(s.id, { type: "message", payload: { role: "user", content: "after" } });
      expect(await workspaceTree(s.workspace)).toEqual(s.treeBefore);
      expect(await writer.readAll(s.id)).toEqual([...s.logBefore, appended]);
      expect(appended.sequence).toBe(s.logBefore.at(-1)!.sequence + 1);
      expect(await writer.backend.listRecords(s.id)).not.toContain("rewind-intent");
      expect((await writer.get(s.id))?.pendingRewind).toBeUndefined();
    });
  }

  it("a writer that meets it while the cause persists gets REWIND_FAILED and changes nothing", async () => {
    const s = await failedRewind(1);
    const pending = await onDisk(s);
    const writer = openStore({ root: s.root });
    const error: any = await writer.append(s.id, { type: "message", payload: { role: "user", content: "x" } }).then(
      () => new Error("expected the append to fail"),
      (e: unknown) => e,
    );
    expect(isAgentTapeError(error, "REWIND_FAILED"), String(error)).toBe(true);
    expect(error.rolledBack).toBe(false);
    expect(error.cause?.code).toBe("EPERM");
    // It tried to roll the rewind back, never forward: the files as before the rewind, log and intent as they were.
    expect(await onDisk(s)).toEqual({ ...pending, tree: s.treeBefore });
  });
});
