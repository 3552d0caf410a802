import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind, verify } from "../../src/index.js";
import { cli } from "../cli/harness.js";
import { codeOf, filesBelow } from "../helpers/outcomes.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import {
  cliStore,
  editSessionRecord,
  setStoredRecordText,
  storedLogBytes,
  storedRecordText,
} from "../helpers/store-backends.js";

// Whoever can write the session folder is not trusted to move a rewind outside the workspace
// (docs/ARCHITECTURE.md, "Confinement"): each attack below edits the store by hand, as they could. On PostgreSQL
// (postgres-rewind-suites.test.ts) the same edits go to the session's row and its records' rows.

/** session.json edited by hand, as whoever can write the session folder could: its workspace is now `workspace`. */
async function pointSessionJsonAt(root: string, id: string, workspace: string): Promise<void> {
  await editSessionRecord(root, id, (record) => ({ ...record, workspace }));
}

/** A new store (another process, as far as the session knows) appends a message: the store and what it threw. */
async function appendAsAnotherWriter(root: string, id: string) {
  const writer = openStore({ root });
  const error = await writer.append(id, { type: "message", payload: { role: "user", content: "x" } }).catch((e) => e);
  return { writer, error };
}

/** A session over `ws` whose `f.txt` was captured as "v1" and then edited, with a victim folder beside it. */
async function editedSession() {
  const base = await realpath(await tempDir("agent-tape-tamper-"));
  const workspace = join(base, "ws");
  const victim = join(base, "victim");
  const root = join(base, "sessions");
  await mkdir(workspace);
  await mkdir(join(victim, "important"), { recursive: true });
  await writeFile(join(workspace, "f.txt"), "v1");
  await writeFile(join(victim, "f.txt"), "victim's own");
  await writeFile(join(victim, "new.txt"), "victim's new");
  await writeFile(join(victim, "important", "keep.txt"), "keep me");
  const store = openStore({ root });
  const { id } = await store.create({ workspace });
  const start = await store.append(id, { type: "message", payload: { role: "user", content: "go" } });
  await new CheckpointStore(store).capture(id, { tool: "edit", paths: ["f.txt", "new.txt"] });
  await writeFile(join(workspace, "f.txt"), "v2");
  await writeFile(join(workspace, "new.txt"), "made by the tool");
  return { base, workspace, victim, root, store, id, target: start.sequence };
}

describe("an edited session.json", () => {
  it("cannot redirect a rewind: the workspace must be the one the tape recorded, else WORKSPACE_MISMATCH", async () => {
    const s = await editedSession();
    const before = await filesBelow(s.victim);
    await pointSessionJsonAt(s.root, s.id, s.victim);

    const reader = openStore({ root: s.root });
    const code = await codeOf(rewind(reader, s.id, { toSequence: s.target }));
    expect(await filesBelow(s.victim)).toEqual(before);
    expect(code).toBe("WORKSPACE_MISMATCH");
    expect(await codeOf(rewind(reader, s.id, { toSequence: s.target, dryRun: true }))).toBe("WORKSPACE_MISMATCH");
    expect(await filesBelow(s.workspace)).toEqual({ "f.txt": "v2", "new.txt": "made by the tool" });

    // The caller naming the workspace is trusted: the rewind goes where it is told.
    const report = await rewind(reader, s.id, { toSequence: s.target, workspace: s.workspace });
    expect(report.filesRestored + report.filesDeleted).toBe(2);
    expect(await filesBelow(s.workspace)).toEqual({ "f.txt": "v1" });
    expect(await filesBelow(s.victim)).toEqual(before);
  });

  it("cannot make later captures record another folder, so no rewind after the edit writes there either", async () => {
    const s = await editedSession();
    await pointSessionJsonAt(s.root, s.id, s.victim);
    const victimBefore = await filesBelow(s.victim);

    // Another process (a new store) goes on capturing, as the agent would after a restart.
    const store = openStore({ root: s.root });
    const checkpoints = new CheckpointStore(store);
    const last = await store.head(s.id);
    expect(await codeOf(checkpoints.capture(s.id, { tool: "edit", paths: ["f.txt", "new.txt"] }))).toBe(
      "WORKSPACE_MISMATCH",
    );
    expect(await codeOf(checkpoints.after(s.id, { tool: "edit", paths: ["f.txt"] }))).toBe("WORKSPACE_MISMATCH");
    expect(await codeOf(checkpoints.beforeCommand(s.id, { tool: "shell" }))).toBe("WORKSPACE_MISMATCH");
    expect(await store.head(s.id)).toBe(last); // nothing recorded from the victim's folder
    const before = await codeOf(checkpoints.capture(s.id, { tool: "edit", paths: ["f.txt"] }));
    expect(before).toBe("WORKSPACE_MISMATCH"); // still refused: the check is not a one-off

    // A rewind to any point after the edit has nothing recorded in the victim's folder to restore there.
    await store.append(s.id, { type: "message", payload: { role: "user", content: "after the edit" } });
    await rewind(store, s.id, { toSequence: last });
    expect(await filesBelow(s.victim)).toEqual(victimBefore);

    // The caller naming the workspace is trusted, as for a rewind.
    const named = await checkpoints.capture(s.id, { tool: "edit", paths: ["f.txt"], workspace: s.workspace });
    expect(named?.payload.workspace).toBe(s.workspace);
    checkpoints.close();
  });

  it("a session whose tape records no snapshot yet takes session.json's workspace, and holds to it after", async () => {
    const base = await realpath(await tempDir("agent-tape-tamper-"));
    const [workspace, other] = [join(base, "ws"), join(base, "other")];
    await mkdir(workspace);
    await mkdir(other);
    await writeFile(join(workspace, "f.txt"), "mine");
    await writeFile(join(other, "f.txt"), "other's");
    const root = join(base, "sessions");
    const store = openStore({ root });
    const { id } = await store.create({ workspace });
    const first = await new CheckpointStore(store).capture(id, { tool: "edit", paths: ["f.txt"] });
    expect(first?.payload.workspace).toBe(workspace);
    await pointSessionJsonAt(root, id, other);
    const code = await codeOf(new CheckpointStore(store).capture(id, { tool: "edit", paths: ["f.txt"] }));
    expect(code).toBe("WORKSPACE_MISMATCH");
  });

  it("is reported by verify (workspace_mismatch); with no snapshot on the tape, it is named unchecked", async () => {
    const s = await editedSession();
    expect((await verify(s.store, s.id)).ok).toBe(true);
    await pointSessionJsonAt(s.root, s.id, s.victim);
    const reader = openStore({ root: s.root });
    const report = await verify(reader, s.id);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({ kind: "workspace_mismatch", named: s.victim, recorded: [s.workspace] }),
    ]);
    expect(report.notChecked).not.toContainEqual(expect.stringContaining("session.json's workspace"));
    const run = await cli(["verify", s.id, ...cliStore(s.root)]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`session.json names "${s.victim}", but the tape's snapshots were taken in`);

    // A tape that holds no snapshot records no workspace: verify cannot tell an edit, and says so.
    const { id } = await reader.create({ workspace: s.victim });
    const bare = await verify(reader, id);
    expect(bare.ok).toBe(true);
    expect(bare.notChecked).toContainEqual(expect.stringContaining("session.json's workspace"));
    expect((await cli(["verify", id, ...cliStore(s.root)])).stdout).toContain("not checked: session.json's workspace");
  });

  it("cannot redirect an undo either: it goes back to the workspace its rewind recorded", async () => {
    const s = await editedSession();
    await rewind(s.store, s.id, { toSequence: s.target });
    const before = await filesBelow(s.victim);
    await pointSessionJsonAt(s.root, s.id, s.victim);
    const reader = openStore({ root: s.root });
    await undoRewind(reader, s.id);
    expect(await filesBelow(s.victim)).toEqual(before);
    expect(await filesBelow(s.workspace)).toEqual({ "f.txt": "v2", "new.txt": "made by the tool" });
  });
});

/**
 * Writes the rewind intent record (`records/rewind-intent.json` on fs) as an attacker would: a marker that fits
 * the tape, and their own files.
 */
async function plantIntent(
  s: Awaited<ReturnType<typeof editedSession>>,
  intent: { workspace?: string; files: unknown[] } | Record<string, unknown>,
) {
  const last = (await s.store.readAll(s.id)).at(-1)!;
  const marker = {
    ...last,
    id: "planted",
    sequence: last.sequence + 1,
    type: "session_rewind",
    payload: {
      targetSequence: s.target,
      mode: "files",
      filesRestored: 0,
      filesDeleted: 1,
      skipped: [],
      changes: [],
      eventsRemoved: 0,
      blobsPruned: 0,
    },
  };
  const full = {
    kind: "rewind",
    markerSequence: marker.sequence,
    truncateTo: last.sequence,
    append: [marker],
    dropArchives: [],
    prune: false,
    ...intent,
  };
  await setStoredRecordText(s.root, s.id, "rewind-intent", JSON.stringify(full));
}

describe("a planted rewind intent", () => {
  it("carrying its own workspace is not rolled forward by list: the session is STORE_TAMPERED", async () => {
    const s = await editedSession();
    const before = await filesBelow(s.victim);
    await plantIntent(s, { workspace: s.victim, files: [{ path: "important", kind: "absent" }] });

    const reader = openStore({ root: s.root });
    const listed = await reader.list();
    expect(await filesBelow(s.victim)).toEqual(before);
    expect(listed.find((info) => info.id === s.id)?.unreadable?.code).toBe("STORE_TAMPERED");
    expect(await codeOf(reader.readAll(s.id))).toBe("STORE_TAMPERED");
    expect(await filesBelow(s.victim)).toEqual(before);
    const report = await verify(reader, s.id);
    expect(report.ok).toBe(false);
    expect(report.problems.map((p) => p.kind)).toContain("intent_tampered");
  });

  it("inside the recorded workspace, cannot change a path the tape does not say to change", async () => {
    const s = await editedSession();
    await mkdir(join(s.workspace, "src"));
    await writeFile(join(s.workspace, "src", "main.ts"), "precious");
    await plantIntent(s, { workspace: s.workspace, files: [{ path: "src", kind: "absent" }] });
    const reader = openStore({ root: s.root });
    expect(await codeOf(reader.append(s.id, { type: "message", payload: { role: "user", content: "x" } }))).toBe(
      "STORE_TAMPERED",
    );
    expect(await readFile(join(s.workspace, "src", "main.ts"), "utf8")).toBe("precious");
  });

  it("marked failed, cannot roll back a path the rewind does not change", async () => {
    const s = await editedSession();
    await writeFile(join(s.workspace, "other.txt"), "precious");
    const checkpoint = (await s.store.readAll(s.id)).find((e) => e.type === "session_checkpoint")!;
    await plantIntent(s, {
      workspace: s.workspace,
      files: (checkpoint.payload as { files: unknown[] }).files, // what the tape holds: fits
      before: [{ path: "other.txt", kind: "absent" }],
      failed: { reason: "planted" },
    });
    const { writer, error } = await appendAsAnotherWriter(s.root, s.id);
    expect(error.code).toBe("STORE_TAMPERED");
    expect(error.message).toContain('would roll back "other.txt"');
    expect(await codeOf(writer.readAll(s.id))).toBe("STORE_TAMPERED");
    expect(await filesBelow(s.workspace)).toEqual({
      "f.txt": "v2",
      "new.txt": "made by the tool",
      "other.txt": "precious",
    });
  });

  it("carrying another session's events is not this tape's: STORE_TAMPERED, nothing appended", async () => {
    const s = await editedSession();
    const checkpoint = (await s.store.readAll(s.id)).find((e) => e.type === "session_checkpoint")!;
    await plantIntent(s, {
      workspace: s.workspace,
      files: (checkpoint.payload as { files: unknown[] }).files, // what the tape holds: fits
    });
    const intent = JSON.parse((await storedRecordText(s.root, s.id, "rewind-intent"))!);
    intent.append = intent.append.map((event: object) => ({ ...event, sessionId: "01OTHERSESSION0000000000000" }));
    await setStoredRecordText(s.root, s.id, "rewind-intent", JSON.stringify(intent));
    const tape = await storedLogBytes(s.root, s.id);
    const { writer, error } = await appendAsAnotherWriter(s.root, s.id);
    expect(error.code).toBe("STORE_TAMPERED");
    expect(error.message).toContain("not this session's");
    expect((await verify(writer, s.id)).problems.map((p) => p.kind)).toContain("intent_tampered");
    expect(await storedLogBytes(s.root, s.id)).toEqual(tape);
    expect(await filesBelow(s.workspace)).toEqual({ "f.txt": "v2", "new.txt": "made by the tool" });
  });

  it("that is not an intent at all is STORE_TAMPERED, and verify says the record is malformed", async () => {
    const s = await editedSession();
    await setStoredRecordText(s.root, s.id, "rewind-intent", JSON.stringify({ kind: "rewind", files: 3 }));
    const reader = openStore({ root: s.root });
    expect(await codeOf(reader.readAll(s.id))).toBe("STORE_TAMPERED");
    const report = await verify(reader, s.id);
    expect(report.problems.map((p) => p.kind)).toContain("record_malformed");
    expect(await filesBelow(s.workspace)).toEqual({ "f.txt": "v2", "new.txt": "made by the tool" });
  });
});
