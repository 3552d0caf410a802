// A batch bigger than a reader holds back (an undo putting back a 999,999-event cut is one batch).
// Readers used to hold every event of a batch until its last line was read: memory that followed the undo's
// batch on every later read. Now a reader holds at most HOLD_EVENTS of it, looks ahead in the file for the
// batch's end, and streams the batch once that end is there (docs/ARCHITECTURE.md, "On disk", batches). These
// check the pieces a reader hands out stay near the hold, and that the batch promise still holds: never part
// of a batch, across damage, cuts in place, a writer still writing and one killed mid-write.
import { appendFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
const HOLD_EVENTS = 4096;
import type { StorageBackend } from "../../src/backend/types.js";
import { serializeEvent } from "../../src/core/envelope.js";
import { isAgentTapeError, type StoredEvent } from "../../src/index.js";
import {
  appendBatch,
  appendSingles,
  endOfLine,
  eventsFrom,
  killedAfter,
  newSession,
  storedEvent,
} from "../helpers/big-batch.js";
import { bytesRead } from "../helpers/bytes-read.js";
import { closeAfter, tempDir } from "../helpers/fixture.js";

const BEFORE = 10; // single events before the batch
const FIRST = BEFORE + 1;
const LAST = BEFORE + 3 * HOLD_EVENTS; // a batch three holds long
/** A reader's largest piece: the hold, plus one 64 KB read's lines (~300 bytes each) on top of it. */
const PIECE_BOUND = HOLD_EVENTS + 512;

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function session(): Promise<{ backend: StorageBackend; id: string; root: string; log: string }> {
  const root = await tempDir("agent-tape-big-batches-");
  const { backend, id } = await newSession(root);
  closeAfter(backend);
  await appendSingles(backend, id, 1, BEFORE);
  return { backend, id, root, log: join(root, id, "events.jsonl") };
}

/** Every piece readEventBatches hands out, with `onCorrupt` reports kept, and the error it ends with. */
async function pieces(
  backend: StorageBackend,
  id: string,
  options: { fromSequence?: number; toSequence?: number; salvage?: boolean } = {},
): Promise<{ sequences: number[]; largest: number; corrupt: number[]; error?: unknown }> {
  const { salvage, ...range } = options;
  const corrupt: number[] = [];
  const sequences: number[] = [];
  let largest = 0;
  try {
    const reading = { ...range, ...(salvage && { onCorrupt: (c: { line: number }) => corrupt.push(c.line) }) };
    for await (const piece of backend.readEventBatches!(id, reading)) {
      largest = Math.max(largest, piece.length);
      for (const event of piece) sequences.push(event.sequence);
    }
  } catch (error) {
    return { sequences, largest, corrupt, error };
  }
  return { sequences, largest, corrupt };
}

async function readEvents(backend: StorageBackend, id: string): Promise<number[]> {
  const sequences: number[] = [];
  for await (const event of backend.readEvents(id)) sequences.push(event.sequence);
  return sequences;
}

function codeOf(error: unknown): string | undefined {
  return isAgentTapeError(error) ? error.code : undefined;
}

/** The lines of `sequences` as a writer without batch marks writes them (tag: their ids' prefix). */
function singleLines(id: string, sequences: number[], tag = "ev"): string {
  return sequences.map((sequence) => serializeEvent(storedEvent(id, sequence, tag)) + "\n").join("");
}

describe("a finished batch bigger than the hold", () => {
  it("comes out in pieces near the hold, whole and in order", async () => {
    const { backend, id } = await session();
    await appendBatch(backend, id, FIRST, LAST);
    await appendSingles(backend, id, LAST + 1, LAST + 5);
    const read = await pieces(backend, id);
    expect(read.error).toBeUndefined();
    expect(read.sequences).toEqual(range(1, LAST + 5));
    expect(read.largest).toBeLessThanOrEqual(PIECE_BOUND);
    expect(await readEvents(backend, id)).toEqual(range(1, LAST + 5));
    expect((await backend.lastEvent(id))?.sequence).toBe(LAST + 5);
  });

  it("read from and to sequences inside it gives exactly that range", async () => {
    const { backend, id } = await session();
    await appendBatch(backend, id, FIRST, LAST);
    const from = FIRST + HOLD_EVENTS / 2;
    const to = LAST - HOLD_EVENTS / 2;
    const read = await pieces(backend, id, { fromSequence: from, toSequence: to });
    expect(read.sequences).toEqual(range(from, to));
    expect(read.largest).toBeLessThanOrEqual(PIECE_BOUND);
    expect((await pieces(backend, id, { toSequence: BEFORE + 2 })).sequences).toEqual(range(1, BEFORE + 2));
    expect((await pieces(backend, id, { fromSequence: LAST })).sequences).toEqual([LAST]);
  });

  it("a batch whose lines are long (past the hold's bytes) comes out in pieces too", async () => {
    const root = await tempDir("agent-tape-big-batches-");
    const { backend, id } = await newSession(root);
    closeAfter(backend);
    const locked = await backend.lock(id);
    // 64 events of 300 KB: 19 MB, past the 8 MB a reader holds, however few the events.
    async function* long(): AsyncGenerator<StoredEvent> {
      for (let sequence = 1; sequence <= 64; sequence++)
        yield { ...storedEvent(id, sequence), payload: { content: String(sequence).padEnd(300_000, "x") } };
    }
    await locked.appendStream!(long(), { first: 1, last: 64 }, { sync: false });
    await locked.release();
    const read = await pieces(backend, id);
    expect(read.sequences).toEqual(range(1, 64));
    expect(read.largest).toBeLessThan(64);
  });
});

describe("the look past a batch bigger than the hold costs little of the log", () => {
  // The reader looked for the batch's end by reading forward from where its hold ended: a batch at the end of
  // the log (an undo's) was read about twice, the look and then the stream (replay of a 1M-event undo: 1.46x
  // the same log unmarked). It now looks from both ends at once: what it reads to find the end is at most twice
  // the distance from the nearer end (src/backend/fs/batch-end.ts).
  const readAll = async (backend: StorageBackend, id: string, log: string) => {
    const size = (await stat(log)).size;
    const before = await bytesRead();
    const sequences = await readEvents(backend, id);
    return { sequences, ratio: ((await bytesRead()) - before) / size };
  };

  it("a batch of ten holds that ends the log is read once, not twice", async () => {
    const { backend, id, log } = await session();
    const last = BEFORE + 10 * HOLD_EVENTS;
    await appendBatch(backend, id, FIRST, last);
    const { sequences, ratio } = await readAll(backend, id, log);
    expect(sequences).toEqual(range(1, last));
    expect(ratio).toBeLessThan(1.1);
  });

  it("a batch of two holds followed by ten holds of single events: not the whole log again", async () => {
    const { backend, id, log } = await session();
    const last = BEFORE + 2 * HOLD_EVENTS;
    await appendBatch(backend, id, FIRST, last);
    await appendSingles(backend, id, last + 1, last + 10 * HOLD_EVENTS);
    const { sequences, ratio } = await readAll(backend, id, log);
    expect(sequences).toEqual(range(1, last + 10 * HOLD_EVENTS));
    expect(ratio).toBeLessThan(1.3); // its end is a hold past the hold: two holds looked at of twelve
  });

  it("a batch whose end is in the middle of the log, looked at from both sides", async () => {
    const { backend, id, log } = await session();
    const last = BEFORE + 6 * HOLD_EVENTS;
    await appendBatch(backend, id, FIRST, last);
    await appendSingles(backend, id, last + 1, last + 5 * HOLD_EVENTS);
    const { sequences, ratio } = await readAll(backend, id, log);
    expect(sequences).toEqual(range(1, last + 5 * HOLD_EVENTS));
    expect(ratio).toBeLessThan(2.1);
  });
});

describe("an unfinished batch bigger than the hold (its writer killed mid-write)", () => {
  it("is left out by every reader, and the next lock holder cuts it", async () => {
    const { backend, id, log } = await session();
    const kept = await endOfLine(log, BEFORE);
    await appendBatch(backend, id, FIRST, LAST);
    await killedAfter(log, LAST - 10);
    const read = await pieces(backend, id);
    expect(read.error).toBeUndefined();
    expect(read.sequences).toEqual(range(1, BEFORE));
    expect(await readEvents(backend, id)).toEqual(range(1, BEFORE));
    expect((await pieces(backend, id, { fromSequence: FIRST + 5 })).sequences).toEqual([]);
    expect((await backend.lastEvent(id))?.sequence).toBe(BEFORE);
    const locked = await backend.lock(id);
    expect(locked.lastSequence).toBe(BEFORE);
    await locked.release();
    expect((await stat(log)).size).toBe(kept);
  });

  it("a reader partway through it while the next lock holder cuts it and appends never sees it", async () => {
    const { backend, id, root, log } = await session();
    await appendBatch(backend, id, FIRST, FIRST + 300); // ~100 KB: the reader's first read ends inside it
    await killedAfter(log, FIRST + 250);
    const reader = backend.readEventBatches!(id)[Symbol.asyncIterator]();
    const first = await reader.next();
    expect(first.value!.map((e: StoredEvent) => e.sequence)).toEqual(range(1, BEFORE));
    // The reader is paused holding the start of the batch. Another process's store takes the lock (cutting
    // the unfinished batch) and appends past where the reader's next read starts.
    const other = fsBackend({ root });
    closeAfter(other);
    await appendSingles(other, id, FIRST, FIRST + 2000, "new");
    const seen: StoredEvent[] = [];
    let error: unknown;
    try {
      for (let next = await reader.next(); !next.done; next = await reader.next()) seen.push(...next.value);
    } catch (caught) {
      error = caught;
    }
    // Either the read is told the tape changed under it, or it reads the tape as it is now; never the cut
    // batch's events, never bytes of both glued into damage.
    expect(seen.filter((e) => !e.id.startsWith("new-"))).toEqual([]);
    if (error !== undefined) expect(codeOf(error)).toBe("TAPE_REWOUND");
    else expect(seen.map((e) => e.sequence)).toEqual(range(FIRST, FIRST + 2000));
  });

  it("a batch still being written is left out until its last line is there", async () => {
    const { backend, id } = await session();
    const locked = await backend.lock(id);
    let resume!: () => void;
    const paused = new Promise<void>((r) => (resume = r));
    let reachedPause!: () => void;
    const atPause = new Promise<void>((r) => (reachedPause = r));
    async function* slowly(): AsyncGenerator<StoredEvent> {
      for await (const event of eventsFrom(id, FIRST, LAST)) {
        if (event.sequence === LAST - 100) {
          reachedPause();
          await paused;
        }
        yield event;
      }
    }
    const writing = locked.appendStream!(slowly(), { first: FIRST, last: LAST }, { sync: false });
    await atPause; // all but the last ~100 lines are in the file (written a 64 KB piece at a time)
    const during = await pieces(backend, id);
    expect(during.sequences).toEqual(range(1, BEFORE));
    resume();
    await writing;
    await locked.release();
    expect((await pieces(backend, id)).sequences).toEqual(range(1, LAST));
  });
});

describe("damage after a batch bigger than the hold", () => {
  it("after a finished batch: the batch comes out, then the damage is reported", async () => {
    const { backend, id, log } = await session();
    await appendBatch(backend, id, FIRST, LAST);
    await appendFile(log, "not json\n" + singleLines(id, [LAST + 1, LAST + 2]));
    const read = await pieces(backend, id);
    expect(read.sequences).toEqual(range(1, LAST));
    expect(codeOf(read.error)).toBe("LOG_CORRUPT");
    expect(read.largest).toBeLessThanOrEqual(PIECE_BOUND);
    const salvaged = await pieces(backend, id, { salvage: true });
    expect(salvaged.sequences).toEqual(range(1, LAST + 2));
    expect(salvaged.corrupt).toEqual([LAST + 1]);
  });

  it("after an unfinished batch: what reached the log is in it for good, handed out as today", async () => {
    const { backend, id, log } = await session();
    await appendBatch(backend, id, FIRST, LAST);
    await killedAfter(log, LAST - 10);
    await appendFile(log, "not json\n" + singleLines(id, [LAST + 1]));
    const read = await pieces(backend, id);
    expect(read.sequences).toEqual(range(1, LAST - 10));
    expect(codeOf(read.error)).toBe("LOG_CORRUPT");
    expect(read.largest).toBeLessThanOrEqual(PIECE_BOUND);
    const salvaged = await pieces(backend, id, { salvage: true });
    expect(salvaged.sequences).toEqual([...range(1, LAST - 10), LAST + 1]);
    expect(salvaged.largest).toBeLessThanOrEqual(PIECE_BOUND);
  });

  it("after an unfinished batch, lines a writer without batch marks added are kept, the batch too", async () => {
    const { backend, id, log } = await session();
    await appendBatch(backend, id, FIRST, LAST);
    await killedAfter(log, LAST - 10);
    await appendFile(log, singleLines(id, [LAST + 1, LAST + 2]));
    const read = await pieces(backend, id);
    expect(read.error).toBeUndefined();
    expect(read.sequences).toEqual([...range(1, LAST - 10), LAST + 1, LAST + 2]);
    expect(read.largest).toBeLessThanOrEqual(PIECE_BOUND);
  });
});

describe("a batch bigger than the hold, cut while a reader streams it", () => {
  /** A reader paused once it has handed out `count` events, and what it handed out. */
  async function pausedReader(backend: StorageBackend, id: string, count: number) {
    const reader = backend.readEventBatches!(id)[Symbol.asyncIterator]();
    const seen: number[] = [];
    while (seen.length < count) for (const event of (await reader.next()).value!) seen.push(event.sequence);
    return { reader, seen };
  }

  async function rest(reader: AsyncIterator<StoredEvent[]>, seen: number[]): Promise<unknown> {
    try {
      for (let next = await reader.next(); !next.done; next = await reader.next())
        for (const event of next.value) seen.push(event.sequence);
    } catch (error) {
      return error;
    }
    return undefined;
  }

  it("cut in place before it (a rewind to before the batch): TAPE_REWOUND, never a mix", async () => {
    const { backend, id, root } = await session();
    await appendBatch(backend, id, FIRST, LAST);
    const { reader, seen } = await pausedReader(backend, id, BEFORE + HOLD_EVENTS + 100);
    expect(seen.length).toBeLessThan(LAST); // mid-batch: handed out before its end was read
    const other = fsBackend({ root });
    closeAfter(other);
    const locked = await other.lock(id);
    await locked.truncateAfter(BEFORE);
    await locked.release();
    await appendSingles(other, id, LAST + 1, LAST + 20_000, "new");
    const error = await rest(reader, seen);
    expect(codeOf(error)).toBe("TAPE_REWOUND");
    expect(seen).toEqual(range(1, seen.length));
  });

  it("cut inside it (the log replaced): the reader goes on with the tape it started on, whole", async () => {
    const { backend, id, root } = await session();
    await appendBatch(backend, id, FIRST, LAST);
    const { reader, seen } = await pausedReader(backend, id, BEFORE + HOLD_EVENTS + 100);
    const other = fsBackend({ root });
    closeAfter(other);
    const locked = await other.lock(id);
    await locked.truncateAfter(FIRST + HOLD_EVENTS);
    await locked.release();
    expect(await rest(reader, seen)).toBeUndefined();
    expect(seen).toEqual(range(1, LAST));
    expect((await pieces(other, id)).sequences).toEqual(range(1, FIRST + HOLD_EVENTS));
  });
});
