import { appendFile, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SessionStoreOptions } from "../../src/index.js";
import { tempDir, tempStore } from "../helpers/fixture.js";

// lockIdleMs 0: the store keeps no lease (and no view of the log's end) between operations, so
// these tests may damage the file between calls the way a crashed writer would.
/** A store on a new temp folder that gives each lock up at once. */
const idleFreeStore = (options: Partial<SessionStoreOptions> = {}) => tempStore({ lockIdleMs: 0, ...options });

const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });

async function sessionWithEvents(count: number, options: Partial<SessionStoreOptions> = {}) {
  const { store, root } = await idleFreeStore(options);
  const { id } = await store.create();
  for (let i = 1; i <= count; i++) await store.append(id, say(`event ${i}`));
  const log = join(root, id, "events.jsonl");
  return { store, root, id, log };
}

/** Every line of the log; fails if the file does not end with a newline. */
async function logLines(log: string): Promise<string[]> {
  const text = await readFile(log, "utf8");
  expect(text.endsWith("\n") || text === "").toBe(true);
  return text === "" ? [] : text.slice(0, -1).split("\n");
}

describe("the envelope on disk", () => {
  it("is one line per event with the documented field order and the payload's keys sorted", async () => {
    const { store, log, id } = await sessionWithEvents(0);
    const event = await store.append(id, {
      type: "message",
      payload: { role: "user", content: "hi", zeta: 1, alpha: { b: 2, a: 1 } },
    });
    expect(await readFile(log, "utf8")).toBe(
      `{"v":1,"id":"${event.id}","sessionId":"${id}","sequence":1,"type":"message","createdAt":"${event.createdAt}",` +
        `"payload":{"alpha":{"a":1,"b":2},"content":"hi","role":"user","zeta":1}}\n`,
    );
    expect(Object.keys(JSON.parse((await logLines(log))[0]!))).toEqual([
      "v",
      "id",
      "sessionId",
      "sequence",
      "type",
      "createdAt",
      "payload",
    ]);
  });

  it("keeps newlines and other characters inside a payload from breaking the one-line-per-event rule", async () => {
    const { store, log, id } = await sessionWithEvents(0);
    const awkward = [
      "two\nlines",
      "carriage\r\nreturn",
      "tab\tand \u2028 separator",
      "emoji 🎞️ and 中文",
      '{"looks":"like json"}\n',
    ];
    for (const content of awkward) await store.append(id, say(content));
    const lines = await logLines(log);
    expect(lines).toHaveLength(awkward.length);
    expect(lines.map((l) => JSON.parse(l).payload.content)).toEqual(awkward);
    expect((await store.readAll(id)).map((e) => (e.payload as { content: string }).content)).toEqual(awkward);
  });
});

describe("a torn last line (a crash mid-append)", () => {
  const fragments: [string, Buffer][] = [
    ["a half-written event", Buffer.from('{"v":1,"id":"01TORN","sessionId":"s","sequ')],
    [
      "a complete event missing only its newline",
      Buffer.from(
        '{"v":1,"id":"01TORN","sessionId":"s","sequence":4,"type":"message",' +
          '"createdAt":"2026-01-01T00:00:00.000Z","payload":{}}',
      ),
    ],
    [
      "a multi-byte character cut in half",
      Buffer.concat([Buffer.from('{"v":1,"payload":"caf'), Buffer.from("é").subarray(0, 1)]),
    ],
    ["a fragment longer than one 64 KB read", Buffer.from('{"v":1,"payload":"' + "x".repeat(200_000))],
  ];

  it.each(fragments)("is skipped by every read: %s", async (_name, fragment) => {
    const { store, id, log } = await sessionWithEvents(3);
    const written = await store.readAll(id);
    await appendFile(log, fragment);
    expect(await store.readAll(id)).toEqual(written);
    expect(await store.salvage(id)).toEqual({ events: written, corrupt: [] });
    expect((await store.get(id))?.lastSequence).toBe(3);
    expect((await store.conversation(id)).messages).toHaveLength(3);
  });

  it.each(fragments)("is cut off before the next append, which is never glued to it: %s", async (_name, fragment) => {
    const { store, id, log } = await sessionWithEvents(3);
    const intact = await readFile(log, "utf8");
    await appendFile(log, fragment);
    const next = await store.append(id, say("after the crash"));
    expect(next.sequence).toBe(4);
    const text = await readFile(log, "utf8");
    expect(text.startsWith(intact)).toBe(true);
    const lines = await logLines(log);
    expect(lines).toHaveLength(4);
    expect(JSON.parse(lines[3]!)).toEqual(next);
    expect((await store.readAll(id)).map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
  });

  it("is cut off when it is all the log holds (the very first append crashed)", async () => {
    const { store, id, log } = await sessionWithEvents(0);
    await writeFile(log, '{"v":1,"id":"01TORN","sess');
    expect(await store.readAll(id)).toEqual([]);
    expect((await store.get(id))?.lastSequence).toBe(0);
    const first = await store.append(id, say("first"));
    expect(first.sequence).toBe(1);
    const lines = await logLines(log);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual(first);
  });

  it("is cut off by appendMany and by a fork's lock too, so no write path can glue onto it", async () => {
    const { store, id, log } = await sessionWithEvents(2);
    await appendFile(log, '{"v":1,"torn');
    const fork = await store.fork(id);
    expect((await store.readAll(fork.id)).map((e) => e.sequence)).toEqual([1, 2, 3]);
    await appendFile(log, '{"v":1,"torn again');
    const many = await store.appendMany(id, [say("a"), say("b")]);
    expect(many.map((e) => e.sequence)).toEqual([3, 4]);
    expect((await logLines(log)).map((l) => JSON.parse(l).sequence)).toEqual([1, 2, 3, 4]);
  });
});

describe("sequences", () => {
  it("carry on from the log after the store is reopened", async () => {
    const { root, id, store } = await sessionWithEvents(3);
    await store.close();
    const { store: reopened } = await idleFreeStore({ root });
    expect((await reopened.append(id, say("after reopening"))).sequence).toBe(4);
  });

  it("come from the log, not from session.json", async () => {
    const { root, id, store } = await sessionWithEvents(3);
    // The metadata file is derived: damaging or removing it changes nothing about numbering.
    await writeFile(
      join(root, id, "session.json"),
      JSON.stringify({ id, createdAt: new Date(0).toISOString(), lastSequence: 99 }),
    );
    expect((await store.append(id, say("next"))).sequence).toBe(4);
    expect((await store.get(id))?.lastSequence).toBe(4);
  });

  it("are never handed out twice to stores taking turns on one session", async () => {
    const root = await tempDir();
    const stores = await Promise.all([
      idleFreeStore({ root }),
      idleFreeStore({ root, lockIdleMs: 5 }),
      idleFreeStore({ root, durability: "batch" }),
    ]);
    const { id } = await stores[0]!.store.create();
    const written = await Promise.all(
      stores.flatMap(({ store }, s) =>
        Array.from({ length: 30 }, (_, i) => store.append(id, say(`store ${s} event ${i}`))),
      ),
    );
    const sequences = written.map((e) => e.sequence).sort((a, b) => a - b);
    expect(sequences).toEqual(Array.from({ length: 90 }, (_, i) => i + 1));
    const onDisk = await stores[0]!.store.readAll(id);
    expect(onDisk.map((e) => e.sequence)).toEqual(sequences);
    // Each store's own events stay in the order it appended them.
    for (let s = 0; s < 3; s++) {
      const mine = onDisk
        .map((e) => (e.payload as { content: string }).content)
        .filter((c) => c.startsWith(`store ${s} `));
      expect(mine).toEqual(Array.from({ length: 30 }, (_, i) => `store ${s} event ${i}`));
    }
  });
});
