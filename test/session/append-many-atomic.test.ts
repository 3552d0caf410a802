import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SessionStore } from "../../src/index.js";
import { fsBackend } from "../../src/backend/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// The log cut at every byte of an appendMany's write, as a crash leaves
// it. A reader at once and the next writer both see the batch whole or not at all; a cut made on purpose
// inside a batch (a rewind's truncation) keeps its part (docs/ARCHITECTURE.md, "On disk"). The same with
// a real SIGKILL: test/session/append-many-crash.process.test.ts.

const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });

function open(root: string): SessionStore {
  const store = openStore({ root, lockIdleMs: 0 });
  return store;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("appendMany after a crash mid-write", () => {
  it("is whole or absent at every byte it could have been cut at, for readers and the next writer", async () => {
    const root = await tempDir();
    const setup = open(root);
    const { id } = await setup.create();
    await setup.append(id, say("one"));
    await setup.append(id, say("two"));
    const log = join(root, id, "events.jsonl");
    const before = (await readFile(log)).length;
    await setup.appendMany(id, [say("3"), say("4 é€"), say("5"), say("6"), say("7")]);
    await setup.close();
    const whole = await readFile(log);

    // Each line's end, a byte either side of it, and the middle of each line.
    const ends = [before, ...range(before + 1, whole.length).filter((i) => whole[i - 1] === 0x0a)];
    const cuts = ends.flatMap((end, i) => [end - 1, end, end + 1, i > 0 ? (end + ends[i - 1]!) >> 1 : end]);
    for (const at of new Set(cuts.filter((c) => c >= before && c <= whole.length))) {
      const copy = await tempDir();
      const store = open(copy);
      const { id: other } = await store.create({ id });
      const copyLog = join(copy, other, "events.jsonl");
      await writeFile(copyLog, whole.subarray(0, at));
      const expected = at === whole.length ? range(1, 7) : range(1, 2);
      expect(
        (await store.readAll(id)).map((e) => e.sequence),
        `reader, cut at ${at}`,
      ).toEqual(expected);
      expect((await store.get(id))?.lastSequence, `get, cut at ${at}`).toBe(expected.length);
      expect((await store.readAll(id, { fromSequence: 4 })).length, `read from 4, cut at ${at}`).toBe(
        expected.length === 7 ? 4 : 0,
      );
      const next = await store.append(id, say("after"));
      expect(next.sequence, `writer, cut at ${at}`).toBe(expected.length + 1);
      expect((await store.readAll(id)).map((e) => e.sequence)).toEqual([...expected, expected.length + 1]);
      // The writer cut the batch's lines off the file, not only out of sight.
      const lines = (await readFile(copyLog, "utf8")).split("\n").filter(Boolean);
      expect(lines, `lines, cut at ${at}`).toHaveLength(expected.length + 1);
    }
  });

  it("keeps the part of a batch a truncation kept, across the next lock", async () => {
    const root = await tempDir();
    const store = open(root);
    const { id } = await store.create();
    await store.appendMany(id, [say("1"), say("2"), say("3"), say("4"), say("5")]);
    const backend = fsBackend({ root });
    for (const keep of [3, 1]) {
      const locked = await backend.lock(id);
      await locked.truncateAfter(keep);
      await locked.release();
      // A fresh store takes the lock, which cuts unfinished batches: the kept part is not one.
      const later = open(root);
      expect(
        (await later.readAll(id)).map((e) => e.sequence),
        `kept ${keep}`,
      ).toEqual(range(1, keep));
      expect((await later.append(id, say("next"))).sequence).toBe(keep + 1);
      expect((await later.readAll(id)).map((e) => e.sequence)).toEqual(range(1, keep + 1));
      await later.close();
    }
    await backend.close();
  });

  it("writes group-committed appends as separate lines, with no batch mark", async () => {
    const root = await tempDir();
    const store = openStore({ root, durability: "batch" });
    const { id } = await store.create();
    await Promise.all(range(1, 20).map((n) => store.append(id, say(String(n)))));
    const text = await readFile(join(root, id, "events.jsonl"), "utf8");
    expect(text).not.toContain('"batch"');
  });
});
