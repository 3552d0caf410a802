// A fork streams the parent's log up to `atSequence` into a new session (docs/ARCHITECTURE.md, "Costs"). Against a
// parent whose log holds appendMany batches, events of several 64 KB read steps, a gap a rewind left, and at its
// end what a killed writer leaves (a torn line, or an unfinished batch): the fork holds exactly the parent's
// events up to the point asked for, whole batches, nothing of the torn end, then its own fork event.
import { appendFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rewind, type StoredEvent } from "../../src/index.js";
import { serializeEvent } from "../../src/core/envelope.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });
const same = (e: StoredEvent) => ({ id: e.id, sequence: e.sequence, type: e.type, payload: e.payload });

async function parentWith(end: "torn" | "unfinished batch") {
  const root = await tempDir("agent-tape-fork-prefix-");
  const store = openStore({ root });
  const { id } = await store.create();
  for (let i = 0; i < 5; i++) await store.append(id, say(`one ${i}`));
  await store.appendMany(id, [say("b1"), say(`b2 ${"é".repeat(100_000)}`), say("b3")]);
  await rewind(store, id, { toSequence: 7, mode: "conversation", keepUndo: 0 }); // inside the batch: a gap after
  await store.appendMany(id, [say("c1"), say("c2")]);
  await store.append(id, say(`big ${"x".repeat(200_000)}`));
  await store.close();
  const log = join(root, id, "events.jsonl");
  const events = await openStore({ root }).readAll(id);
  const last = events.at(-1)!;
  const line = (sequence: number, batch?: { first: number; last: number }) =>
    serializeEvent({ ...last, id: `killed${sequence}`, sequence, payload: { role: "user", content: "lost" } }, batch);
  if (end === "torn") await appendFile(log, line(last.sequence + 1).slice(0, 40));
  else {
    const batch = { first: last.sequence + 1, last: last.sequence + 3 };
    await appendFile(log, `${line(batch.first, batch)}\n${line(batch.first + 1, batch)}\n`);
  }
  const forker = openStore({ root });
  return { forker, id, log, events };
}

describe.each(["torn", "unfinished batch"] as const)("a fork of a log that ends %s", (end) => {
  it("holds exactly the parent's events up to each point, then its fork event", async () => {
    const { forker, id, events } = await parentWith(end);
    for (const at of [0, 3, 6, 7, events.at(-2)!.sequence, events.at(-1)!.sequence]) {
      const fork = await forker.fork(id, { atSequence: at });
      const copied = await forker.readAll(fork.id);
      expect(copied.slice(0, -1).map(same)).toEqual(events.filter((e) => e.sequence <= at).map(same));
      expect(copied.at(-1)!.type).toBe("session_fork");
      expect(copied.every((e) => e.sessionId === fork.id)).toBe(true);
    }
  });

  it("at the parent's end, which the lock cut back to its last whole event", async () => {
    const { forker, id, log, events } = await parentWith(end);
    const fork = await forker.fork(id);
    expect((await forker.readAll(fork.id)).slice(0, -1).map(same)).toEqual(events.map(same));
    expect((await readFile(log, "utf8")).includes("killed")).toBe(false);
  });
});
