// Issue 16: the last event of a log that ends inside a batch (a writer killed mid-write, or one still writing a
// 999,999-event undo). Readers do not see such a batch, so the last event is the one before it, and finding that
// means checking the batch's lines. Every call used to check them all again from the batch's start: a reader
// polling `head` while an undo was written read the whole batch each time. Now a call goes on from where the
// last one on the same log stopped, and starts over after a cut or on another log.
import { appendFile, readFile, stat, truncate } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { StorageBackend } from "../../src/backend/types.js";
import type { StoredEvent } from "../../src/index.js";
import { appendBatch, appendSingles, endOfLine, newSession, storedEvent } from "../helpers/big-batch.js";
import { bytesRead } from "../helpers/bytes-read.js";
import { codeOf } from "../helpers/outcomes.js";
import { TempRoots } from "../helpers/temp-root.js";

const temps = new TempRoots();
const backends: StorageBackend[] = [];
afterEach(async () => {
  for (const backend of backends.splice(0)) await backend.close();
  await temps.removeAll();
});

const BEFORE = 10;
const FIRST = BEFORE + 1;
const LAST = BEFORE + 20_000; // ~6 MB of batch

/** A session whose log ends with BEFORE single events, and the whole batch FIRST..LAST kept aside as bytes. */
async function sessionWithBatchAside(): Promise<{ backend: StorageBackend; id: string; log: string; batch: Buffer }> {
  const root = await temps.make("agent-tape-unfinished-head-");
  const { backend, id } = await newSession(root);
  backends.push(backend);
  await appendSingles(backend, id, 1, BEFORE);
  const log = join(root, id, "events.jsonl");
  const kept = (await stat(log)).size;
  await appendBatch(backend, id, FIRST, LAST);
  const batch = (await readFile(log)).subarray(kept);
  await truncate(log, kept);
  return { backend, id, log, batch };
}

/** Byte offset, within `batch`, just past the line of `sequence`. */
function pastLine(batch: Buffer, sequence: number): number {
  const at = batch.indexOf(`"sequence":${sequence},`);
  return batch.indexOf(0x0a, at) + 1;
}

async function lastSequenceAndBytesRead(backend: StorageBackend, id: string): Promise<[number | undefined, number]> {
  const before = await bytesRead();
  const last = (await backend.lastEvent(id))?.sequence;
  return [last, (await bytesRead()) - before];
}

describe("the last event of a log that ends inside a batch", () => {
  it("asked again and again while the batch is written, reads what was added, not the batch again", async () => {
    const { backend, id, log, batch } = await sessionWithBatchAside();
    // A writer still writing: the batch reaches the log a piece at a time.
    const steps = [LAST - 15_000, LAST - 10_000, LAST - 5_000, LAST - 1];
    let written = 0;
    const reads: number[] = [];
    for (const sequence of steps) {
      const upTo = pastLine(batch, sequence);
      await appendFile(log, batch.subarray(written, upTo));
      written = upTo;
      const [last, read] = await lastSequenceAndBytesRead(backend, id);
      expect(last).toBe(BEFORE);
      reads.push(read);
      // And again, nothing added: next to nothing read.
      const [again, readAgain] = await lastSequenceAndBytesRead(backend, id);
      expect(again).toBe(BEFORE);
      expect(readAgain).toBeLessThan(256 * 1024);
    }
    // Each later call read about the part added since (~5,000 lines), not all of the batch so far (up to 20,000).
    const perLine = batch.length / (LAST - FIRST + 1);
    for (const read of reads.slice(1)) expect(read).toBeLessThan(7_500 * perLine);
    await appendFile(log, batch.subarray(written));
    expect((await backend.lastEvent(id))?.sequence).toBe(LAST);
  });

  it("still finds damage in what was added after a call, and starts over after a cut", async () => {
    const { backend, id, log, batch } = await sessionWithBatchAside();
    await appendFile(log, batch.subarray(0, pastLine(batch, FIRST + 100)));
    expect((await backend.lastEvent(id))?.sequence).toBe(BEFORE);
    // Lines of the batch written again (a doubled write): damage, in the part not yet checked.
    await appendFile(log, batch.subarray(pastLine(batch, FIRST + 50), pastLine(batch, FIRST + 60)));
    expect(await codeOf(backend.lastEvent(id))).toBe("LOG_CORRUPT");

    // Put right by hand, checked again; then the next lock holder cuts the unfinished batch (a recorded cut).
    await truncate(log, await endOfLine(log, FIRST + 100));
    expect((await backend.lastEvent(id))?.sequence).toBe(BEFORE);
    const locked = await backend.lock(id);
    expect(locked.lastSequence).toBe(BEFORE);
    // It writes a batch with the same numbers and longer lines, and is killed mid-write: the same log file, and
    // where the last call stopped is no line's end in it now.
    try {
      await locked.appendStream!(longerLines(id, FIRST, LAST), { first: FIRST, last: LAST }, { sync: false });
    } finally {
      await locked.release();
    }
    await truncate(log, await endOfLine(log, FIRST + 3_000));
    expect((await backend.lastEvent(id))?.sequence).toBe(BEFORE);
    await appendSingles(backend, id, FIRST, FIRST + 4, "new");
    expect((await backend.lastEvent(id))?.sequence).toBe(FIRST + 4);
  });
});

async function* longerLines(id: string, first: number, last: number): AsyncGenerator<StoredEvent> {
  for (let sequence = first; sequence <= last; sequence++) yield storedEvent(id, sequence, "a-longer-tag");
}
