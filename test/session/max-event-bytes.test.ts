import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { isAgentTapeError, type SessionStoreOptions } from "../../src/index.js";
import { expectRejection } from "../helpers/expect-rejection.js";
import { closeAfter, openStore, tempDir, tempStore } from "../helpers/fixture.js";

// An event too large to read back cheaply is refused when appended, with a typed
// error that says how large it was and how to raise the limit; a log that already holds one still
// reads (docs/ARCHITECTURE.md, "On disk").

const events = { note: z.object({ text: z.string() }) };

async function openSession(options: Partial<SessionStoreOptions<typeof events>> = {}) {
  const { store, root } = await tempStore({ events, ...options });
  const { id } = await store.create();
  return { store, root, id, log: join(root, id, "events.jsonl") };
}

const note = (chars: number) => ({ type: "note" as const, payload: { text: "é".repeat(chars) } });

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return isAgentTapeError(error) ? error.code : String(error);
  }
}

describe("maxEventBytes", () => {
  it("defaults to 16 MiB", async () => {
    const { store } = await openSession();
    expect(store.maxEventBytes).toBe(16 * 1024 * 1024);
  });

  it("refuses an event whose line would pass it, naming its size and the option, and writes nothing", async () => {
    const { store, id, log } = await openSession({ maxEventBytes: 4096 });
    await store.append(id, note(10));
    const sizeBefore = (await stat(log)).size;
    // "é" is two bytes in UTF-8: 3000 characters are 6000 bytes, over the limit though under it in chars.
    const tooLarge = await expectRejection(store.append(id, note(3000)), "EVENT_TOO_LARGE");
    expect(tooLarge.limit).toBe(4096);
    expect(tooLarge.bytes).toBeGreaterThan(6000);
    expect(tooLarge.message).toMatch(/maxEventBytes/);
    expect((await stat(log)).size).toBe(sizeBefore);
    expect((await store.append(id, note(10))).sequence).toBe(2);
  });

  it("counts the whole line: an event that fits is written, and its line is within the limit", async () => {
    const limit = 4096;
    const { store, id, log } = await openSession({ maxEventBytes: limit, durability: "none" });
    // Bisect to the largest event that is accepted: every line written stays within the limit.
    let fits = 1;
    let refused = limit;
    expect(await codeOf(store.append(id, note(refused)))).toBe("EVENT_TOO_LARGE");
    while (refused - fits > 1) {
      const mid = (fits + refused) >> 1;
      if ((await codeOf(store.append(id, note(mid)))) === undefined) fits = mid;
      else refused = mid;
    }
    const lines = (await readFile(log, "utf8")).split("\n").filter(Boolean);
    const longest = Math.max(...lines.map((line) => Buffer.byteLength(line + "\n")));
    expect(longest).toBeLessThanOrEqual(limit);
    expect(longest).toBeGreaterThan(limit - 64); // and the limit is not much stricter than it says
  });

  it("fails a whole appendMany with one oversized event, writing none of it", async () => {
    const { store, id } = await openSession({ maxEventBytes: 4096 });
    expect(await codeOf(store.appendMany(id, [note(1), note(3000), note(1)]))).toBe("EVENT_TOO_LARGE");
    expect(await store.readAll(id)).toEqual([]);
  });

  it("under group commit fails only the oversized append", async () => {
    const { store, id } = await openSession({ maxEventBytes: 4096, durability: "batch" });
    const codes = await Promise.all([note(1), note(3000), note(2)].map((e) => codeOf(store.append(id, e))));
    expect(codes).toEqual([undefined, "EVENT_TOO_LARGE", undefined]);
    expect((await store.readAll(id, { types: ["note"] })).map((e) => e.payload.text.length)).toEqual([1, 2]);
  });

  it("holds inside withLock too", async () => {
    const { store, id } = await openSession({ maxEventBytes: 4096 });
    expect(await codeOf(store.withLock(id, (held) => held.append(note(3000))))).toBe("EVENT_TOO_LARGE");
  });

  it.each([0, -1, 1.5, Number.NaN, "16MB"])("rejects %s as a limit", async (limit) => {
    const root = await tempDir();
    expect(() => openStore({ root, maxEventBytes: limit as number })).toThrow(/maxEventBytes/);
  });

  it("does not stop a store with a lower limit from reading an event written under a higher one", async () => {
    const { store, id, root } = await openSession({ maxEventBytes: 1024 * 1024 });
    const big = await store.append(id, note(200_000));
    await store.append(id, note(1));
    const strict = openStore({ root, events, maxEventBytes: 4096 });
    closeAfter(strict);
    const read = await strict.readAll(id);
    expect(read.map((e) => e.sequence)).toEqual([1, 2]);
    expect(read[0]!.payload).toEqual(big.payload);
    expect(await strict.readAll(id, { fromSequence: 2 })).toHaveLength(1);
  });
});
