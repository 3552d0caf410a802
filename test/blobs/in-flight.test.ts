// A capture's blobs are written before its event (store-then-reference); these are the states a failed or
// killed capture leaves, and how the next holder of the lock clears them (docs/ARCHITECTURE.md, "Blobs").
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { CheckpointStore, type SessionStore } from "../../src/index.js";
import { BLOBS_IN_FLIGHT_RECORD } from "../../src/blobs/in-flight.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { openStore, tempDir } from "../helpers/fixture.js";

let root: string;
let workspace: string;
let store: SessionStore;
let checkpoints: CheckpointStore;
let sessionId: string;

beforeEach(async () => {
  const base = await realpath(await tempDir("agent-tape-blobs-"));
  root = join(base, "sessions");
  workspace = join(base, "ws");
  await mkdir(workspace);
  store = openStore({ root });
  checkpoints = new CheckpointStore(store);
  sessionId = (await store.create({ workspace })).id;
});

async function put(path: string, content: string): Promise<void> {
  await writeFile(join(workspace, path), content);
}

const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");

/** Every file under the session's blobs folder, temp files included: what is really on disk. */
async function filesUnderBlobs(id: string): Promise<string[]> {
  const dir = join(root, id, "blobs");
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

describe("a capture whose blob write fails", () => {
  it("throws, records nothing, leaves no orphan blob even if the next capture in the lease succeeds", async () => {
    const leased = openStore({ root, lockIdleMs: 60_000 }); // keeps the lock between the two captures
    await store.close();
    const leasedCheckpoints = new CheckpointStore(leased);
    const stored = "this one is written";
    // Too big once compressed for the pack (random text): a file of its own, in a shard folder.
    const refused = `this one cannot be written ${randomBytes(6000).toString("base64")}`;
    await put("stored.txt", stored);
    await put("refused.txt", refused);
    // A dangling link where the second blob's shard folder goes: its write fails as a full disk would.
    const shard = join(root, sessionId, "blobs", sha256(refused).slice(0, 2));
    await mkdir(join(shard, ".."), { recursive: true });
    await symlink(join(root, "no-such-folder"), shard);

    await expect(
      leasedCheckpoints.capture(sessionId, { tool: "edit", paths: ["stored.txt", "refused.txt"] }),
    ).rejects.toThrow();
    expect(await leased.readAll(sessionId)).toEqual([]);
    // The pack keeps the written one's entry and its deletion until it is compacted: no blob file besides.
    expect((await filesUnderBlobs(sessionId)).filter((file) => !file.endsWith(".pack"))).toEqual([]);

    await rm(shard);
    expect(await leased.backend.listBlobs(sessionId)).toEqual([]);
    await put("next.txt", "the next capture");
    await leasedCheckpoints.capture(sessionId, { tool: "edit", paths: ["next.txt"] });
    expect(await leased.backend.listBlobs(sessionId)).toEqual([sha256("the next capture")]);
    await leased.close();
    expect(await leased.backend.listRecords(sessionId)).toEqual([]);
  });
});

describe("a capture that died between its blobs and its event", () => {
  // The state a SIGKILL leaves at that moment, built by hand so the outcome is certain
  // (test/checkpoint/capture-crash.process.test.ts kills real captures at random moments).
  async function dieAfterBlobs(options: { eventWritten: boolean }): Promise<{ fresh: string; earlier: string }> {
    await put("a.txt", "indexed by an earlier checkpoint");
    await checkpoints.capture(sessionId, { tool: "edit", paths: ["a.txt"] });
    await store.close(); // its idle lease would otherwise keep the lock from the dying store
    const earlier = sha256("indexed by an earlier checkpoint");
    const fresh = sha256("written by the capture that died");
    const dying = openStore({ root });
    await lockedAccess(dying).withLockedSession(sessionId, async (locked) => {
      // The note a capture leaves before its first blob (src/blobs/in-flight.ts), as a dead process leaves it.
      await locked.writeRecord(BLOBS_IN_FLIGHT_RECORD, { pid: 0, at: new Date().toISOString() });
      await locked.writeBlob(fresh, Buffer.from("written by the capture that died"));
      if (options.eventWritten) {
        const files = [{ path: "b.txt", kind: "blob" as const, blob: fresh, bytes: 32, mode: 0o644 }];
        await lockedAccess(dying).appendUnderLock(locked, [
          lockedAccess(dying).eventFor(sessionId, {
            type: "session_checkpoint",
            payload: { tool: "edit", workspace, files },
          }),
        ]);
      }
    });
    await dying.close(); // gives the lock up with the record still there, as a dead process's stale lock would
    return { fresh, earlier };
  }

  it("has its blobs removed by the next holder of the lock, and nothing older touched", async () => {
    const { fresh, earlier } = await dieAfterBlobs({ eventWritten: false });
    const next = openStore({ root });
    await next.append(sessionId, { type: "message", payload: { role: "user", content: "next turn" } });
    expect(await next.backend.listBlobs(sessionId)).toEqual([earlier]);
    expect(await next.backend.listBlobs(sessionId)).not.toContain(fresh);
    expect(await next.backend.listRecords(sessionId)).toEqual([]);
  });

  it("keeps its blobs when the event made it to the log before the death", async () => {
    const { fresh, earlier } = await dieAfterBlobs({ eventWritten: true });
    const next = openStore({ root });
    await next.append(sessionId, { type: "message", payload: { role: "user", content: "next turn" } });
    expect((await next.backend.listBlobs(sessionId)).sort()).toEqual([earlier, fresh].sort());
    expect((await new CheckpointStore(next).readBlob(sessionId, fresh)).toString()).toBe(
      "written by the capture that died",
    );
    expect(await next.backend.listRecords(sessionId)).toEqual([]);
  });
});

describe("a blob write cut short by a crash", () => {
  it("leaves no temp file once the next store takes the lock", async () => {
    const root = await tempDir("agent-tape-blob-temp-");
    {
      const first = openStore({ root });
      const session = await first.create({ id: "s" });
      await first.close();
      // What a process killed between opening a blob's temp file and renaming it leaves behind.
      const hash = createHash("sha256").update("never finished").digest("hex");
      const incoming = join(root, "s", "blobs", ".incoming");
      await mkdir(incoming, { recursive: true });
      await writeFile(join(incoming, `${hash}-0123abcd`), "never fin");
      await mkdir(join(root, "s", "records"), { recursive: true });
      await writeFile(join(root, "s", "records", `${BLOBS_IN_FLIGHT_RECORD}.json`), JSON.stringify({ pid: 0 }));

      const next = openStore({ root });
      await next.append(session.id, { type: "message", payload: { role: "user", content: "after the crash" } });
      await next.close();
      expect(await readdir(join(root, "s", "blobs"))).toEqual([]);
      expect(await readdir(join(root, "s", "records"))).toEqual([]);
    }
  });
});
