import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { VERIFY_NEVER_CHECKS, isAgentTapeError, rewind, verify, type VerifyProgress } from "../../src/index.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { BACKENDS, seed, sha256, type Seeded } from "./sessions.js";
import { closeAfter } from "../helpers/fixture.js";
import { editLogLines, setStoredRecordText, storedLogBytes } from "../helpers/store-backends.js";

async function seeded(...args: Parameters<typeof seed>): Promise<Seeded> {
  const s = await seed(...args);
  closeAfter(s);
  return s;
}

/** Replaces a blob's bytes behind the store's back, as bit rot or a stray write would. */
async function damageBlob(s: Seeded, hash: string, bytes: string): Promise<void> {
  await lockedAccess(s.store).withLockedSession(s.id, async (locked) => {
    await locked.deleteBlob(hash);
    await locked.writeBlob(hash, Buffer.from(bytes));
  });
}

describe.each(BACKENDS)("verify (%s backend)", (kind) => {
  it("passes an intact session: every event read, every referenced blob re-hashed", async () => {
    const s = await seeded(kind);
    const seen: VerifyProgress[] = [];
    const report = await verify(s.store, s.id, { onProgress: (p) => seen.push(p) });
    const notChecked = [...VERIFY_NEVER_CHECKS]; // a tape with a snapshot, no intent, no retention: nothing else
    expect(report).toEqual({ sessionId: s.id, ok: true, events: 3, blobsChecked: 1, problems: [], notChecked });
    expect(seen.at(-1)).toEqual({ eventsRead: 3, blobsChecked: 1, blobsToCheck: 1 });
  });

  it("names a missing blob and a damaged one with the event and path that reference them", async () => {
    const s = await seeded(kind);
    await s.store.append(s.id, { type: "message", payload: { role: "user", content: "and b.txt too" } });
    await writeFile(join(s.workspace, "b.txt"), "bee\n");
    await s.checkpoints.capture(s.id, { tool: "write_file", paths: ["b.txt"] });
    const one = sha256("one\n");
    const bee = sha256("bee\n");
    await lockedAccess(s.store).withLockedSession(s.id, (locked) => locked.deleteBlob(one));
    await damageBlob(s, bee, "not bee\n");

    const report = await verify(s.store, s.id);
    expect(report.ok).toBe(false);
    expect(report.blobsChecked).toBe(2);
    expect(report.problems).toEqual([
      {
        kind: "blob_missing",
        hash: one,
        referencedBy: { sequence: 2, type: "session_checkpoint", path: "a.txt" },
        message: `blob ${one} is missing (a.txt, checkpoint #2)`,
      },
      {
        kind: "blob_corrupt",
        hash: bee,
        // Longer than the 4 bytes recorded: read no further than 5, the hash is theirs.
        actualHash: sha256("not b"),
        referencedBy: { sequence: 5, type: "session_checkpoint", path: "b.txt" },
        message: `blob ${bee} is damaged: it does not hold the 4 bytes its snapshot recorded (b.txt, checkpoint #5)`,
      },
    ]);
  });

  it("checks the blobs a rewind archive keeps for undo, naming the archive", async () => {
    const s = await seeded(kind);
    await rewind(s.store, s.id, { toSequence: 1 });
    const one = sha256("one\n");
    await damageBlob(s, one, "damaged");
    const report = await verify(s.store, s.id);
    expect(report.problems).toMatchObject([
      { kind: "blob_corrupt", hash: one, referencedBy: { sequence: 2, path: "a.txt", archive: "rewind-archive-4" } },
    ]);
    expect(report.problems[0]!.message).toContain("(a.txt, checkpoint #2 in rewind-archive-4)");
  });

  it("reports a rewind archive that holds no events as a malformed record, and changes nothing", async () => {
    const s = await seeded(kind);
    await lockedAccess(s.store).withLockedSession(s.id, (locked) =>
      locked.writeRecord("rewind-archive-9", { events: "gone" }),
    );
    const report = await verify(s.store, s.id);
    expect(report.problems).toEqual([
      {
        kind: "record_malformed",
        record: "rewind-archive-9",
        message: "rewind archive rewind-archive-9 is malformed: it does not hold the list of events the rewind cut",
      },
    ]);
    expect(await s.store.backend.readRecord(s.id, "rewind-archive-9")).toEqual({ events: "gone" });
  });

  it("throws SESSION_NOT_FOUND for a session that does not exist", async () => {
    const s = await seeded(kind);
    const error = await verify(s.store, "missing").catch((e: unknown) => e);
    expect(isAgentTapeError(error, "SESSION_NOT_FOUND")).toBe(true);
  });

  it("rejects with the signal's reason when aborted", async () => {
    const s = await seeded(kind);
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    await expect(verify(s.store, s.id, { signal: controller.signal })).rejects.toThrow("stop");
  });
});

describe.each(BACKENDS.filter((kind) => kind !== "memory"))(
  "verify: damage by hand where it is stored (%s backend)",
  (kind) => {
    it("lists every corrupt line with its 1-based line number, and reads past them", async () => {
      const s = await seeded(kind);
      // Line 1 cut off; line 3 holds event #2 again (on PostgreSQL, the row of #3 does): it does not follow line 2.
      const second = (await storedLogBytes(s.root!, s.id)).toString("utf8").split("\n")[1]!;
      await editLogLines(s.root!, s.id, (line, index) =>
        index === 0 ? '{"v":1,"sequence":1, cut off' : index === 2 ? second : line,
      );

      // PostgreSQL keys each line by its sequence, so it names the row the line is not.
      const misplaced = kind === "postgres" ? "the line says sequence 2, its row 3" : "sequence 2 does not follow 2";
      const report = await verify(s.store, s.id);
      expect(report.events).toBe(1);
      expect(report.problems).toMatchObject([
        { kind: "corrupt_line", line: 1, message: expect.stringMatching(/^events\.jsonl line 1: not valid JSON/) },
        { kind: "corrupt_line", line: 3, message: `events.jsonl line 3: ${misplaced}` },
      ]);
    });

    it("reports a side record that cannot be read, naming it", async () => {
      const s = await seeded(kind);
      await rewind(s.store, s.id, { toSequence: 1 });
      await setStoredRecordText(s.root!, s.id, "rewind-archive-4", "{ not json");
      const report = await verify(s.store, s.id);
      expect(report.problems).toMatchObject([{ kind: "record_unreadable", record: "rewind-archive-4" }]);
      expect(report.problems[0]!.message).toMatch(/^rewind archive rewind-archive-4 cannot be read: /);
    });
  },
);
