// A rewind cuts the log in place (one ftruncate), so a lock-free reader holding the log open could glue bytes
// from before the cut to bytes appended after it. These readers are paused mid-read while another store rewinds
// the session, then resumed: they must give the tape as it is now, or TAPE_REWOUND, never a mix.
import { appendFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rewind, type StoredEvent } from "../../src/index.js";
import { readLines } from "../../src/backend/fs/lines.js";
import { keptEndFor } from "../../src/backend/fs/seek.js";
import { sizeOf } from "../../src/backend/fs/log-reads.js";
import { codeOf } from "../helpers/outcomes.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const EVENTS = 3000; // ~1 MB: many 64 KB reads

async function longSession() {
  const root = await tempDir("agent-tape-log-cuts-");
  const writer = openStore({ root, durability: "none" });
  const reader = openStore({ root, durability: "none" });
  const { id } = await writer.create();
  // One event per append: no batch marks, so a rewind between any two is a cut in place.
  for (let i = 1; i <= EVENTS; i++)
    await writer.append(id, { type: "message", payload: { role: "user", content: `event ${i} `.padEnd(300, "z") } });
  return { root, id, writer, reader };
}

/** Reads `count` events of `stream`, leaving it paused mid-log. */
async function take(stream: AsyncIterator<StoredEvent>, count: number): Promise<number[]> {
  const seen: number[] = [];
  while (seen.length < count) seen.push((await stream.next()).value!.sequence);
  return seen;
}

async function rest(stream: AsyncIterator<StoredEvent>): Promise<number[]> {
  const seen: number[] = [];
  for (let next = await stream.next(); !next.done; next = await stream.next()) seen.push(next.value.sequence);
  return seen;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("a rewind's cut in place, against a reader reading meanwhile", () => {
  it("is one ftruncate: the log keeps its file, and the cut is recorded beside it", async () => {
    const { root, id, writer } = await longSession();
    const log = join(root, id, "events.jsonl");
    const before = await stat(log);
    await rewind(writer, id, { toSequence: 2000, mode: "conversation", keepUndo: 0 });
    expect((await stat(log)).ino).toBe(before.ino);
    expect((await stat(join(root, id, "events.cuts"))).size).toBe(2 * 17); // before and after the ftruncate
    expect((await writer.readAll(id)).map((e) => e.sequence)).toEqual([...range(1, 2000), EVENTS + 1]);
  });

  it("a reader still before the cut point goes on and reads the tape as it is now", async () => {
    const { id, writer, reader } = await longSession();
    const stream = reader.read(id)[Symbol.asyncIterator]();
    const first = await take(stream, 100);
    await rewind(writer, id, { toSequence: 2000, mode: "conversation", keepUndo: 0 });
    await writer.append(id, { type: "message", payload: { role: "user", content: "after the rewind" } });
    expect([...first, ...(await rest(stream))]).toEqual([...range(1, 2000), EVENTS + 1, EVENTS + 2]);
  });

  it("a reader that already handed out cut events gets TAPE_REWOUND, never a mix of both tapes", async () => {
    const { id, writer, reader } = await longSession();
    const stream = reader.read(id)[Symbol.asyncIterator]();
    await take(stream, 2500);
    await rewind(writer, id, { toSequence: 1000, mode: "conversation", keepUndo: 0 });
    // Appended after the cut, at offsets the reader has already passed: what it would glue on.
    for (let i = 0; i < 2000; i++)
      await writer.append(id, { type: "message", payload: { role: "user", content: `new ${i} `.padEnd(300, "n") } });
    expect(await codeOf(rest(stream))).toBe("TAPE_REWOUND");
    // Read again: the tape as it is now.
    const now = (await reader.readAll(id)).map((e) => e.sequence);
    expect(now).toEqual([...range(1, 1000), ...range(EVENTS + 1, EVENTS + 2001)]);
  });

  it("a read that has handed out nothing yet, cut while it looked for where to start, starts again", async () => {
    const { root, id, writer } = await longSession();
    const log = join(root, id, "events.jsonl");
    let looks = 0;
    const lines: number[] = [];
    const reading = readLines(log, {
      cutsFile: join(root, id, "events.cuts"),
      // Where the last 10 events start, found before a cut that lands before the first read.
      startAt: async (fh) => {
        const at = (await keptEndFor(fh, sizeOf(fh), EVENTS - 10))!.offset;
        if (looks++ === 0) await rewind(writer, id, { toSequence: EVENTS - 20, mode: "conversation", keepUndo: 0 });
        return at;
      },
    });
    for await (const chunk of reading) for (const line of chunk) lines.push(JSON.parse(line.text).sequence);
    expect(looks).toBe(2);
    // Found again on the log as it is now: from the marker, the first event after EVENTS - 10 on it.
    expect(lines).toEqual([EVENTS + 1]);
  });

  it("a cut record that is torn or not a number counts as a cut at the log's start", async () => {
    const { root, id, reader } = await longSession();
    const cuts = join(root, id, "events.cuts");
    await writeFile(cuts, "");
    const paused = reader.read(id)[Symbol.asyncIterator]();
    await take(paused, 100);
    await appendFile(cuts, "00000000000009"); // torn: no newline, too short
    expect(await codeOf(rest(paused))).toBe("TAPE_REWOUND");

    await writeFile(cuts, "");
    const other = reader.read(id)[Symbol.asyncIterator]();
    await take(other, 100);
    await appendFile(cuts, "not a number!!!!\n");
    expect(await codeOf(rest(other))).toBe("TAPE_REWOUND");
    // Nothing changed in the log: a fresh read gives it whole.
    expect((await reader.readAll(id)).map((e) => e.sequence)).toEqual(range(1, EVENTS));
  });

  it("a cut inside a batch still rewrites the log into a new file (no single call can rewrite a line)", async () => {
    const { root, id, writer } = await longSession();
    await writer.appendMany(
      id,
      range(1, 5).map((i) => ({ type: "message" as const, payload: { role: "user" as const, content: `b${i}` } })),
    );
    const log = join(root, id, "events.jsonl");
    const before = await stat(log);
    await rewind(writer, id, { toSequence: EVENTS + 2, mode: "conversation", keepUndo: 0 });
    expect((await stat(log)).ino).not.toBe(before.ino);
    const after = await writer.readAll(id);
    expect(after.map((e) => e.sequence).slice(-3)).toEqual([EVENTS + 1, EVENTS + 2, EVENTS + 6]);
  });
});
