// Attacks on the cut record (events.cuts): a rewind's ftruncate is not the only in-place cut of the log. The next
// lock holder cuts a torn last line or an unfinished batch a killed writer left, and an append or appendStream
// that fails takes back what it wrote with an ftruncate. A lock-free reader paused past such a cut, resumed after
// new events were appended, must give the tape as it is now or TAPE_REWOUND: never bytes from before the cut glued
// to bytes from after it (docs/ARCHITECTURE.md, "On disk": a cut in place).
import { appendFile, readFile, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAgentTapeError, type StoredEvent } from "../../src/index.js";
import { fsBackend } from "../../src/backend/index.js";
import { serializeEvent } from "../../src/core/envelope.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const EVENTS = 3000;
const CONTENT = 2000; // characters of a new event's content: it reaches past where the torn line ended

async function longSession() {
  const root = await tempDir("agent-tape-cut-recovery-");
  const writer = openStore({ root, durability: "none" });
  const { id } = await writer.create();
  for (let i = 1; i <= EVENTS; i++)
    await writer.append(id, { type: "message", payload: { role: "user", content: `event ${i} `.padEnd(300, "z") } });
  await writer.close(); // the next append takes the lock afresh, and cuts what a killed writer left
  return { root, id, log: join(root, id, "events.jsonl") };
}

/** A line as the store writes it for a message, with an id as long as the store's own ids. */
function lineLike(template: StoredEvent, sequence: number, content: string, batch?: { first: number; last: number }) {
  const event = { ...template, id: "x".repeat(template.id.length), sequence, payload: { content, role: "user" } };
  return serializeEvent(event, batch) + "\n";
}

async function take(stream: AsyncIterator<StoredEvent>, count: number): Promise<StoredEvent[]> {
  const seen: StoredEvent[] = [];
  while (seen.length < count) seen.push((await stream.next()).value!);
  return seen;
}

/** The rest of a read, or the AgentTapeError code it ended with. */
async function rest(stream: AsyncIterator<StoredEvent>): Promise<StoredEvent[] | string> {
  const seen: StoredEvent[] = [];
  try {
    for (let next = await stream.next(); !next.done; next = await stream.next()) seen.push(next.value);
    return seen;
  } catch (error) {
    if (isAgentTapeError(error)) return error.code;
    throw error;
  }
}

describe("cuts made by the next lock holder and by a failed append, against a paused reader", () => {
  it("a torn last line cut by the next lock holder is never glued to the line appended after it", async () => {
    const { root, id, log } = await longSession();
    const template = JSON.parse((await readFile(log, "utf8")).trim().split("\n").pop()!) as StoredEvent;
    // A writer killed mid-line: the first bytes of a line much like the next one the store will write, torn
    // inside its content, so that its bytes and the new line's line up.
    const torn = lineLike(template, EVENTS + 1, "a".repeat(CONTENT));
    await appendFile(log, torn.slice(0, torn.indexOf('"content":"') + 200));
    const reader = openStore({ root, durability: "none" });
    const paused = reader.read(id)[Symbol.asyncIterator]();
    expect((await take(paused, EVENTS)).at(-1)!.sequence).toBe(EVENTS); // it has read the torn bytes too
    const writer = openStore({ root, durability: "none" });
    const appended = await writer.append(id, {
      type: "message",
      payload: { role: "user", content: "b".repeat(CONTENT) },
    });
    // It handed out nothing past the cut: it reads on, the tape as it is now (before the fix: an event made of
    // the torn line's first bytes and the new line's last ones, which was never in the log).
    const after = await rest(paused);
    expect(typeof after === "string" ? after : after.map((e) => [e.id, e.sequence])).toEqual([
      [appended.id, appended.sequence],
    ]);
  });

  it("an unfinished batch cut by the next lock holder is never glued to what is appended after it", async () => {
    const { root, id, log } = await longSession();
    const template = JSON.parse((await readFile(log, "utf8")).trim().split("\n").pop()!) as StoredEvent;
    const batch = { first: EVENTS + 1, last: EVENTS + 9 };
    const lines = [1, 2, 3].map((i) => lineLike(template, EVENTS + i, "a".repeat(CONTENT), batch));
    await appendFile(log, lines.join("").slice(0, -CONTENT)); // killed in the batch's third line
    const reader = openStore({ root, durability: "none" });
    const paused = reader.read(id)[Symbol.asyncIterator]();
    expect((await take(paused, EVENTS)).at(-1)!.sequence).toBe(EVENTS);
    const writer = openStore({ root, durability: "none" });
    const appended: StoredEvent[] = [];
    for (let i = 0; i < 3; i++)
      appended.push(
        await writer.append(id, { type: "message", payload: { role: "user", content: "b".repeat(CONTENT) } }),
      );
    // It had read the batch's lines (held back, not handed out): TAPE_REWOUND, read again. Before the fix the
    // new lines' ends were glued to the torn third line, and the read ended without the appended events.
    expect(await rest(paused)).toBe("TAPE_REWOUND");
    expect((await reader.readAll(id)).slice(EVENTS).map((e) => e.id)).toEqual(appended.map((e) => e.id));
  });

  it("a batch appendStream took back (its source failed) is never glued to what is appended after", async () => {
    const { root, id } = await longSession();
    const backend = fsBackend({ root });
    const locked = await backend.lock(id);
    const template = (await openStore({ root }).readAll(id)).at(-1)!;
    let pause!: () => void;
    const paused = new Promise<void>((resolve) => (pause = resolve));
    let go!: () => void;
    const resumed = new Promise<void>((resolve) => (go = resolve));
    const event = (sequence: number, content: string): StoredEvent => ({
      ...template,
      id: `e${sequence}`.padEnd(template.id.length, "0"),
      sequence,
      payload: { role: "user", content },
    });
    async function* failing(): AsyncGenerator<StoredEvent> {
      for (let s = EVENTS + 1; s <= EVENTS + 200; s++) yield event(s, "a".repeat(CONTENT));
      pause(); // several 64 KB writes of the batch are in the log now
      await resumed;
      throw new Error("the source failed half-way (as a tampered archive does)");
    }
    const streaming = locked.appendStream!(failing(), { first: EVENTS + 1, last: EVENTS + 300 });
    await paused;
    const reader = openStore({ root, durability: "none" });
    const stream = reader.read(id)[Symbol.asyncIterator]();
    expect((await take(stream, EVENTS)).at(-1)!.sequence).toBe(EVENTS); // with batch lines held after it
    go();
    await expect(streaming).rejects.toThrow("half-way");
    // Other events take the numbers the batch would have had, past where the reader stopped.
    const others = Array.from({ length: 200 }, (_, i) => event(EVENTS + 1 + i, "b".repeat(CONTENT)));
    for (const other of others) await locked.append([other], { sync: false });
    await locked.release();
    // Before the fix: LOG_CORRUPT, a line glued from the taken-back batch and the events after it.
    expect(await rest(stream)).toBe("TAPE_REWOUND");
    expect((await reader.readAll(id)).slice(EVENTS).map((e) => e.id)).toEqual(others.map((e) => e.id));
  });
});

describe("a cut record grown by hand", () => {
  it("by gigabytes while a reader reads: TAPE_REWOUND, not an attempt to read it all into memory", async () => {
    const { root, id } = await longSession();
    const cuts = join(root, id, "events.cuts");
    await writeFile(cuts, "");
    const reader = openStore({ root, durability: "none" });
    const paused = reader.read(id)[Symbol.asyncIterator]();
    await take(paused, 100);
    await truncate(cuts, 5 * 1024 ** 3); // sparse: no disk, 5 GiB of zeros to a reader
    // Before: RangeError (no AgentTapeError) from a 5 GiB buffer; on a Node that allows it, 5 GiB read in.
    expect(await rest(paused)).toBe("TAPE_REWOUND");
    expect((await reader.readAll(id)).length).toBe(EVENTS);
  });
});
