// In the process tier: a real child process holds one session's lock while a store opens with retention.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type SessionStore, isAgentTapeError } from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const names = async (store: SessionStore) => (await store.list()).map((s) => s.id).sort();

/** Sessions a, b, c made in that order a few ms apart, each with one message (c the newest), by another store. */
async function threeSessions(root: string): Promise<void> {
  const maker = openStore({ root, lockIdleMs: 0 });
  for (const id of ["a", "b", "c"]) {
    await maker.create({ id });
    await maker.append(id, { type: "message", payload: { role: "user", content: id.repeat(100) } });
    await sleep(5);
  }
  await maker.close();
}

describe("retention applied by the store as it opens", () => {
  it("keepNewest 1: deletes b, keeps a (its lock held by a live child) and c; once per open (1 round)", async () => {
    const root = join(await tempDir("agent-tape-retention-open-"), "root");
    await threeSessions(root);
    const holder = new Child("hold-session-lock.ts", [root, "a", "2000"]);
    children.push(holder);
    await holder.waitForLine((line) => line === "locked");

    const store = openStore({ root, lockStaleMs: 2000, lockIdleMs: 0, retention: { keepNewest: 1 } });
    const report = await store.retention;
    expect(report?.deleted.map((d) => [d.sessionId, d.reason])).toEqual([["b", "count"]]);
    expect(report?.held).toEqual([{ sessionId: "a", reason: "count" }]);
    expect(await names(store)).toEqual(["a", "c"]);
    expect((await store.readAll("a")).length).toBe(1); // the held session is whole

    // Not again while this store is open: new sessions past the limit stay.
    await store.create({ id: "d" });
    await store.create({ id: "e" });
    await sleep(20);
    expect(await names(store)).toEqual(["a", "c", "d", "e"]);
    expect(await store.retention).toBe(report);
  });

  it("without the option nothing is deleted; an invalid policy rejects `retention`; close() still works", async () => {
    const root = join(await tempDir("agent-tape-retention-open-"), "root");
    await threeSessions(root);
    const plain = openStore({ root });
    expect(await plain.retention).toBeUndefined();
    expect(await names(plain)).toEqual(["a", "b", "c"]);

    const invalid = openStore({ root, retention: { keepNewest: -1 } });
    const error = await invalid.retention.catch((e: unknown) => e);
    expect(isAgentTapeError(error, "INVALID_ARGUMENT"), String(error)).toBe(true);
    expect(await names(invalid)).toEqual(["a", "b", "c"]);
    await invalid.close();
  });
});
