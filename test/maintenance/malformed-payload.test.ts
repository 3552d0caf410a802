// A built-in event whose payload is not what its schema says (a checkpoint with `files: "zzz"`,
// written by hand or by a broken program) must be reported by `verify`, refused by `rewind` with a typed error,
// and must stop `gc` from pruning blobs: a reference gc cannot read is not a reference it may assume absent.
import { readdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CheckpointStore,
  type SessionStore,
  type StoredEvent,
  gc,
  rewind,
  undoRewind,
  verify,
} from "../../src/index.js";
import { parseEventLine } from "../../src/core/envelope.js";
import { codeOf, filesBelow } from "../helpers/outcomes.js";
import { put } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { byHand, storedLogBytes } from "../helpers/store-backends.js";

/** a.txt captured as "a1" then edited to "a2", between two messages; the store closed, as a later process finds it. */
async function editedSession() {
  const base = await realpath(await tempDir("agent-tape-malformed-"));
  const workspace = join(base, "ws");
  const root = join(base, "sessions");
  await put(workspace, "a.txt", "a1");
  const store = openStore({ root });
  const { id } = await store.create({ workspace });
  const say = (content: string) => store.append(id, { type: "message", payload: { role: "user", content } });
  const target = (await say("start")).sequence;
  await new CheckpointStore(store).around(id, { tool: "edit", paths: ["a.txt"] }, () => put(workspace, "a.txt", "a2"));
  await say("later");
  await store.close();
  return { root, workspace, id, target };
}

/**
 * Rewrites the log by hand: `edit` changes the payload of the first event of `type`. Returns its sequence. The
 * file on the fs backend; the event's row on another (test/helpers/store-backends.ts).
 */
async function editPayload(root: string, id: string, type: string, edit: (payload: any) => void): Promise<number> {
  const file = join(root, id, "events.jsonl");
  const lines = (await storedLogBytes(root, id)).toString("utf8").split("\n");
  const at = lines.findIndex((line) => line !== "" && JSON.parse(line).type === type);
  // Edited in the form of the schema, as read back (a checkpoint's or a marker's line holds rows: file-rows.ts),
  // and written in that form, which reads as it is.
  const event = parseEventLine(lines[at]!) as StoredEvent<string, any>;
  edit(event.payload);
  lines[at] = JSON.stringify(event);
  const other = byHand();
  if (other) await other.setLine(root, id, event.sequence, lines[at]);
  else await writeFile(file, lines.join("\n"));
  return event.sequence;
}

async function blobsOf(root: string, id: string): Promise<string[]> {
  const other = byHand();
  if (other) return other.blobHashes(root, id);
  const entries = await readdir(join(root, id, "blobs"), { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && !e.parentPath.includes(".incoming")).map((e) => e.name);
}

function open(root: string): SessionStore {
  const store = openStore({ root });
  return store;
}

describe("a checkpoint whose files are not a list", () => {
  it("verify reports it, rewind refuses it with STORE_TAMPERED, gc prunes nothing", async () => {
    const s = await editedSession();
    const sequence = await editPayload(s.root, s.id, "session_checkpoint", (payload) => {
      payload.files = "zzz";
    });
    const store = open(s.root);
    const blobsBefore = await blobsOf(s.root, s.id);
    expect(blobsBefore.length).toBe(1); // a1's bytes, the only copy of what a.txt held

    const report = await verify(store, s.id);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({ kind: "payload_invalid", sequence, type: "session_checkpoint" }),
    ]);
    expect(report.problems[0]!.message).toMatch(/files/);

    expect(await codeOf(rewind(store, s.id, { toSequence: s.target }))).toBe("STORE_TAMPERED");
    expect(await codeOf(rewind(store, s.id, { toSequence: s.target, dryRun: true }))).toBe("STORE_TAMPERED");
    expect(await filesBelow(s.workspace)).toEqual({ "a.txt": "a2" });

    const collected = await gc(store);
    expect(collected.failed.map((f) => [f.sessionId, f.code])).toEqual([[s.id, "STORE_TAMPERED"]]);
    expect(collected.orphanBlobs).toBe(0);
    expect(await blobsOf(s.root, s.id)).toEqual(blobsBefore);
  });

  it("a snapshot in the list that is not a snapshot is refused the same way", async () => {
    const s = await editedSession();
    await editPayload(s.root, s.id, "session_checkpoint", (payload) => {
      payload.files[0].blob = 42;
    });
    const store = open(s.root);
    const blobsBefore = await blobsOf(s.root, s.id);
    expect((await verify(store, s.id)).problems.map((p) => p.kind)).toEqual(["payload_invalid"]);
    expect(await codeOf(rewind(store, s.id, { toSequence: s.target }))).toBe("STORE_TAMPERED");
    expect((await gc(store)).failed.map((f) => f.code)).toEqual(["STORE_TAMPERED"]);
    expect(await blobsOf(s.root, s.id)).toEqual(blobsBefore);
  });

  it("a rewind marker whose undo snapshot is malformed: undo and gc refuse, verify reports it", async () => {
    const s = await editedSession();
    const first = open(s.root);
    await rewind(first, s.id, { toSequence: s.target });
    await first.close();
    const sequence = await editPayload(s.root, s.id, "session_rewind", (payload) => {
      payload.undo.files = { not: "a list" };
    });
    const store = open(s.root);
    const blobsBefore = await blobsOf(s.root, s.id);
    expect(blobsBefore.length).toBeGreaterThan(0);
    expect((await verify(store, s.id)).problems).toEqual([
      expect.objectContaining({ kind: "payload_invalid", sequence, type: "session_rewind" }),
    ]);
    expect(await codeOf(undoRewind(store, s.id))).toBe("STORE_TAMPERED");
    expect((await gc(store)).failed.map((f) => f.code)).toEqual(["STORE_TAMPERED"]);
    expect(await blobsOf(s.root, s.id)).toEqual(blobsBefore);
  });

  it("verify checks every built-in payload, not only the ones that hold blobs", async () => {
    const s = await editedSession();
    const sequence = await editPayload(s.root, s.id, "message", (payload) => {
      payload.role = 7;
    });
    const report = await verify(open(s.root), s.id);
    expect(report.problems).toEqual([expect.objectContaining({ kind: "payload_invalid", sequence, type: "message" })]);
    expect(report.problems[0]!.message).toMatch(/role/);
  });
});
