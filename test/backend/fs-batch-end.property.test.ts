// The look past a batch (batch-end.ts, lastLineAhead: a search from both ends of the log) against a model of the
// same log: its lines as the test wrote them, looked at one by one. Random logs of events of random sizes (some
// longer than the reads), in multi-byte characters, payload text shaped like a batch's last line, the batch
// finished or not, lines after it, a torn end; the reader's hold ending anywhere in the batch; reads from a few
// bytes past the searched text's length up, so that lines and the text fall across reads and across the point
// where the two ends meet.
import { open, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lastLineAhead } from "../../src/backend/fs/batch-end.js";
import { serializeEvent, type LineBatch } from "../../src/core/envelope.js";
import type { StoredEvent } from "../../src/index.js";
import { tempDir } from "../helpers/fixture.js";
import { rounds } from "../helpers/rounds.js";

const SESSION = "batch-end-model";
const PIECES = ["a", "é", "𝄞", '"sequence":9,"batch":[4,9],', "\\n", "z"];

const event = (sequence: number, piece: string, repeat: number): StoredEvent => ({
  v: 1,
  id: `e${sequence}`,
  sessionId: SESSION,
  sequence,
  type: "message",
  createdAt: "2026-12-01T00:00:00.000Z",
  payload: { content: piece.repeat(repeat) },
});

const text = fc.record({ piece: fc.constantFrom(...PIECES), repeat: fc.nat(120) });

const shape = fc.record({
  before: fc.array(text, { maxLength: 6 }),
  batch: fc.array(text, { minLength: 2, maxLength: 12 }),
  /** How many of the batch's lines reached the log (all of them: a finished batch). */
  written: fc.double({ min: 0, max: 1, noNaN: true }),
  after: fc.array(text, { maxLength: 8 }),
  /** Where the reader's hold ended: after this share of the batch's written lines. */
  held: fc.double({ min: 0, max: 1, noNaN: true }),
  torn: fc.option(fc.double({ min: 0.05, max: 0.95, noNaN: true })),
  scanBytes: fc.integer({ min: 1, max: 400 }),
});

describe("the look past a batch, from both ends of the log, against a line-by-line model", () => {
  it("finds the batch's last line exactly when a complete line after the hold is it", async () => {
    const dir = await tempDir("agent-tape-batch-end-");
    let round = 0;
    await fc.assert(
      fc.asyncProperty(shape, async (s) => {
        const lines: { text: string; event: StoredEvent; batch?: LineBatch }[] = [];
        let sequence = 0;
        for (const t of s.before) lines.push({ text: "", event: event(++sequence, t.piece, t.repeat) });
        const batch = { first: sequence + 1, last: sequence + s.batch.length };
        const written = s.written > 0.5 ? s.batch.length : Math.floor(s.written * 2 * s.batch.length);
        for (const t of s.batch.slice(0, written))
          lines.push({ text: "", event: event(++sequence, t.piece, t.repeat), batch });
        // After a finished batch the log goes on; after an unfinished one, a writer without marks may add lines.
        if (written === s.batch.length || s.after.length % 2 === 0)
          for (const t of s.after) lines.push({ text: "", event: event(++sequence + 100, t.piece, t.repeat) });
        for (const line of lines) line.text = `${serializeEvent(line.event, line.batch)}\n`;
        // The hold ends after a line of the batch the reader read (its first, at least): `from` is the next
        // line's start.
        const firstOfBatch = s.before.length;
        if (written === 0) return; // no line of the batch reached the log: nothing for a reader to hold
        const heldLines = firstOfBatch + 1 + Math.floor(s.held * (written - 1));
        let bytes = Buffer.concat(lines.map((line) => Buffer.from(line.text)));
        const from = Buffer.byteLength(
          lines
            .slice(0, heldLines)
            .map((line) => line.text)
            .join(""),
        );
        if (s.torn !== null) {
          const tail = Buffer.from(serializeEvent(event(++sequence + 100, "a", 40), batch));
          bytes = Buffer.concat([bytes, tail.subarray(0, Math.floor(tail.length * s.torn))]);
        }
        // The model: a complete line after `from` that is the batch's last, with its mark.
        const expected = lines
          .slice(heldLines)
          .some((line) => line.event.sequence === batch.last && line.batch?.last === batch.last);
        const file = join(dir, `log-${round++}.jsonl`);
        await writeFile(file, bytes);
        const fh = await open(file, "r");
        try {
          expect(await lastLineAhead(fh, from, batch, s.scanBytes)).toBe(expected);
        } finally {
          await fh.close();
        }
      }),
      { numRuns: rounds(300, 3000) },
    );
  });
});
