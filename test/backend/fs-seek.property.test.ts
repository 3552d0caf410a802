// The backward seek (seek.ts) against a forwards model of the same log: random logs of events of random sizes
// (some many 64 KB steps long, in multi-byte characters a step boundary splits), gaps in the sequence, batch
// marks, CRLF line ends a hand edit leaves, payload text that looks like a line of another sequence, and a torn
// or unfinished end. The model is the log's lines as written, parsed nowhere: it is the list the test built.
import { open, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../src/index.js";
import { fsBackend } from "../../src/backend/index.js";
import { keptEndFor, keptEndForwards } from "../../src/backend/fs/seek.js";
import { serializeEvent } from "../../src/core/envelope.js";
import { rounds } from "../helpers/rounds.js";
import { tempDir } from "../helpers/fixture.js";

const SESSION = "seek-model";

/** Pieces payload text is made of: multi-byte characters, and text shaped like another event's line. */
const PIECES = ["a", "é", "€", "𝄞", "\n", '\n{"sequence":5,', '"sequence":1}', "\r\n", "\\", '"'];

interface Spec {
  gap: number; // sequence step from the event before (a rewind marker skips numbers)
  piece: number;
  repeat: number;
  /** This event starts a batch of this many events (1: no batch). */
  batch: number;
  crlf: boolean;
}

const spec: fc.Arbitrary<Spec> = fc.record({
  gap: fc.integer({ min: 1, max: 3 }),
  piece: fc.nat(PIECES.length - 1),
  // Mostly short; now and then longer than a few 64 KB steps.
  repeat: fc.oneof(
    { weight: 8, arbitrary: fc.nat(300) },
    { weight: 1, arbitrary: fc.integer({ min: 20_000, max: 80_000 }) },
  ),
  batch: fc.oneof({ weight: 4, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 5 }) }),
  crlf: fc.boolean(),
});

type End = { kind: "whole" } | { kind: "torn"; keep: number } | { kind: "unfinished"; lines: number; keep: number };

const end: fc.Arbitrary<End> = fc.oneof(
  fc.constant({ kind: "whole" as const }),
  fc.record({ kind: fc.constant("torn" as const), keep: fc.double({ min: 0.01, max: 0.99, noNaN: true }) }),
  fc.record({
    kind: fc.constant("unfinished" as const),
    lines: fc.integer({ min: 1, max: 3 }),
    keep: fc.double({ min: 0, max: 0.99, noNaN: true }),
  }),
);

interface Line {
  event: StoredEvent;
  end: number; // byte just past its newline
  batch?: { first: number; last: number };
}

/** The log's bytes, its complete lines as written (the model), and the events a reader must give. */
function build(specs: Spec[], tail: End) {
  const lines: Line[] = [];
  let text = "";
  let bytes = 0;
  let sequence = 0;
  const add = (event: StoredEvent, batch: { first: number; last: number } | undefined, crlf: boolean) => {
    const line = serializeEvent(event, batch) + (crlf ? "\r\n" : "\n");
    text += line;
    bytes += Buffer.byteLength(line);
    lines.push({ event, end: bytes, ...(batch && { batch }) });
  };
  const eventOf = (s: Spec, seq: number): StoredEvent => ({
    v: 1,
    id: `e${seq}`,
    sessionId: SESSION,
    sequence: seq,
    type: "message",
    createdAt: "2026-12-01T00:00:00.000Z",
    payload: { role: "user", content: PIECES[s.piece]!.repeat(s.repeat) },
  });
  for (let i = 0; i < specs.length; ) {
    const group = specs.slice(i, i + specs[i]!.batch);
    i += group.length;
    const seqs = group.map((s) => (sequence += s.gap));
    const batch = group.length > 1 ? { first: seqs[0]!, last: seqs.at(-1)! } : undefined;
    for (const [k, s] of group.entries()) add(eventOf(s, seqs[k]!), batch, s.crlf);
  }
  const whole = lines.map((l) => l.event); // what a reader gives: every batch here is finished
  if (tail.kind === "torn") {
    const torn = serializeEvent(eventOf({ gap: 1, piece: 1, repeat: 500, batch: 1, crlf: false }, sequence + 1));
    text += torn.slice(0, Math.max(1, Math.floor(torn.length * tail.keep)));
  } else if (tail.kind === "unfinished") {
    // A writer killed in a batch of lines + 1 events: some lines whole, maybe part of the next.
    const batch = { first: sequence + 1, last: sequence + tail.lines + 1 };
    for (let k = 1; k <= tail.lines; k++) add(eventOf(specs[0]!, sequence + k), batch, false);
    const next = serializeEvent(eventOf(specs[0]!, sequence + tail.lines + 1), batch);
    text += next.slice(0, Math.floor(next.length * tail.keep));
  }
  return { text, lines, whole };
}

/** The model's answer: the end of the last complete line whose sequence is at most `target`. */
function modelKeptEnd(lines: Line[], target: number) {
  let kept = { offset: 0, sequence: 0 };
  for (const line of lines)
    if (line.event.sequence <= target) kept = { offset: line.end, sequence: line.event.sequence };
  return kept;
}

const log = fc.record({
  specs: fc.array(spec, { minLength: 1, maxLength: 25 }),
  tail: end,
  targets: fc.array(fc.nat(90), { minLength: 1, maxLength: 6 }),
});

describe("the backward seek agrees with a forwards model of the log", () => {
  it("keptEndFor (backwards) and keptEndForwards give the model's kept end for any target", async () => {
    const dir = await tempDir("agent-tape-seek-model-");
    const file = join(dir, "events.jsonl");
    await fc.assert(
      fc.asyncProperty(log, async ({ specs, tail, targets }) => {
        const { text, lines } = build(specs, tail);
        await writeFile(file, text);
        const fh = await open(file, "r");
        try {
          const size = (await fh.stat()).size;
          for (const target of targets) {
            const expected = modelKeptEnd(lines, target);
            expect(await keptEndFor(fh, size, target)).toEqual(expected);
            expect(await keptEndForwards(file, target)).toEqual(expected);
          }
        } finally {
          await fh.close();
        }
      }),
      { numRuns: rounds(50, 300) },
    );
  });

  it("a read from a sequence gives the model's events from there, whole batches only", async () => {
    const root = await tempDir("agent-tape-seek-read-");
    const backend = fsBackend({ root });
    await backend.createSession({ id: SESSION, createdAt: "2026-12-01T00:00:00.000Z" });
    const file = join(root, SESSION, "events.jsonl");
    await fc.assert(
      fc.asyncProperty(log, async ({ specs, tail, targets }) => {
        const { text, whole } = build(specs, tail);
        await writeFile(file, text);
        for (const from of targets) {
          const to = from + (targets[0]! % 7) * 3;
          const read: StoredEvent[] = [];
          for await (const e of backend.readEvents(SESSION, { fromSequence: from, toSequence: to })) read.push(e);
          const expected = whole.filter((e) => e.sequence >= from && e.sequence <= to);
          expect(read).toEqual(expected);
        }
        const last = await backend.lastEvent(SESSION);
        expect(last?.sequence).toBe(whole.at(-1)?.sequence);
      }),
      { numRuns: rounds(50, 300) },
    );
  });
});
