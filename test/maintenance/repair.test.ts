// A rewind intent that cannot be acted on (docs/ARCHITECTURE.md, "Rewind intent", repair): every operation of
// the session refuses it with STORE_TAMPERED, whose message names `repair`. `repair` shows the intent and
// why it does not fit; finishes one that is well formed and fits the tape; discards one only when told to;
// all under the session's lock. The library function and the CLI command.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { LockedSession, StorageBackend } from "../../src/backend/types.js";
import { isAgentTapeError, repair, rewind } from "../../src/index.js";
import { editedTwoFiles, workspaceTree } from "../helpers/rewind-workspace.js";
import { cli } from "../cli/harness.js";
import { openStore } from "../helpers/fixture.js";
import { cliStore, setStoredRecordText, storedRecordText } from "../helpers/store-backends.js";

const next = { type: "message", payload: { role: "user", content: "next" } } as const;

async function failure(promise: Promise<unknown>): Promise<any> {
  return promise.then(
    () => new Error("expected a failure"),
    (e: unknown) => e,
  );
}

/** `backend`, telling `seen` the text of each rewind intent written under its locks (JSON, as the record holds it). */
function watchingIntents(backend: StorageBackend, seen: (text: string) => void): StorageBackend {
  const watchLocked = (locked: LockedSession) =>
    new Proxy(locked, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key !== "writeRecord" && key !== "writeRecordWithBlobs") return value;
        return (name: string, record: unknown, ...rest: unknown[]) => {
          if (name === "rewind-intent") seen(JSON.stringify(record));
          return value.call(target, name, record, ...rest);
        };
      },
    });
  return new Proxy(backend, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key !== "lock") return value;
      return async (...args: Parameters<StorageBackend["lock"]>) => watchLocked(await target.lock(...args));
    },
  });
}

/** The intent as a crash right after writing it leaves it (copied then, the rewind itself rolled back). */
async function interruptedRewind() {
  const s = await editedTwoFiles("agent-tape-repair-");
  await s.store.close();
  let written = "";
  // A store whose backend is watched from before it takes the session's lock (a store keeps the lock it took).
  const rewinder = openStore({ backend: watchingIntents(openStore({ root: s.root }).backend, (t) => (written = t)) });
  let intent = "";
  await failure(
    rewind(rewinder, s.id, {
      toSequence: s.target,
      onProgress: (step) => {
        if (step !== "intent-written") return;
        intent = written;
        throw new Error("killed here");
      },
    }),
  );
  await rewinder.close();
  // The intent record (records/rewind-intent.json on fs), read or edited by hand.
  const setIntent = (text: string) => setStoredRecordText(s.root, s.id, "rewind-intent", text);
  const intentNow = () => storedRecordText(s.root, s.id, "rewind-intent");
  return { ...s, intent, setIntent, intentNow };
}

describe("repair", () => {
  it("a garbled intent: shown and kept until told to discard it, then the session works again", async () => {
    const s = await interruptedRewind();
    const garbled = JSON.stringify({ ...JSON.parse(s.intent), append: "zzz" });
    await s.setIntent(garbled);
    const tree = await workspaceTree(s.workspace);
    const store = openStore({ root: s.root });

    const refused = await failure(store.append(s.id, next));
    expect(isAgentTapeError(refused, "STORE_TAMPERED")).toBe(true);
    expect(refused.message).toContain(`agent-tape repair ${s.id}`);

    const looked = await repair(store, s.id);
    expect(looked.action).toBe("kept");
    expect(looked.intent).toMatchObject({ kind: "rewind", problem: expect.stringMatching(/append/) });
    expect(await s.intentNow()).toBe(garbled);
    expect(isAgentTapeError(await failure(store.append(s.id, next)), "STORE_TAMPERED")).toBe(true);

    const discarded = await repair(store, s.id, { discard: true });
    expect(discarded.action).toBe("discarded");
    expect((await store.append(s.id, next)).type).toBe("message"); // the session takes appends again
    expect(await workspaceTree(s.workspace)).toEqual(tree); // nothing of the workspace touched
  });

  it("a well-formed intent that fits the tape is finished", async () => {
    const s = await interruptedRewind();
    await s.setIntent(s.intent);
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
    await s.setIntent("{ not json at all");
    const shown = await cli(["repair", s.id, ...cliStore(s.root)]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toMatch(/cannot be acted on/);
    expect(shown.stdout).toContain("--discard");
    const dropped = await cli(["repair", s.id, "--discard", ...cliStore(s.root)]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toMatch(/discarded/i);
    const again = await cli(["repair", s.id, ...cliStore(s.root)]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/no rewind intent/i);
    const json = JSON.parse((await cli(["repair", s.id, "--json", ...cliStore(s.root)])).stdout);
    expect(json).toEqual({ sessionId: s.id, action: "none" });
  });
});
