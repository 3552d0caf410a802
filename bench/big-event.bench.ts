import { open } from "node:fs/promises";
import { join } from "node:path";
import { serializeEvent } from "../src/core/envelope.js";
import { newId } from "../src/core/ids.js";
import { FORMAT_VERSION, SessionStore } from "../src/index.js";
import { type Figure, interleavedRounds, median, type Row, type Suite } from "./harness.js";
import { prose, replayLine } from "./workload.js";

const MB = 1024 * 1024;
/** Small events around the big one, so a read from a later sequence has something to find. */
const SMALL_BEFORE = 100;
const SMALL_AFTER = 100;

/**
 * Reading a log that holds one very large event (a 50 MB tool result written before `maxEventBytes`
 * existed, or by a store with a raised limit): the time per MB must not grow with the line's length
 * (docs/ARCHITECTURE.md, "On disk"). The baseline is the same read of a log whose big line is 1 MB, so
 * a ratio near 1 is linear; a line split across chunks used to be re-copied per 64 KB chunk, which
 * made a 50 MB line take seconds. Also timed: `read({ fromSequence })` of only the events after it.
 */
export const bigEventSuite: Suite = {
  name: "big-event",
  async run({ quick, tempDir, log }) {
    const sizes = quick ? [1, 5, 10] : [1, 10, 50];
    const rounds = quick ? 3 : 5;
    const root = await tempDir();
    const store = new SessionStore({ root });
    try {
      const sessions: Record<number, { id: string; bytes: number }> = {};
      for (const size of sizes) {
        const { id } = await store.create({ title: `one ${size} MB event` });
        const bytes = await writeLogWithBigEvent(join(root, id, "events.jsonl"), id, size * MB);
        sessions[size] = { id, bytes };
        log(`  log with a ${size} MB event: ${(bytes / MB).toFixed(1)} MB`);
      }
      const readAll = (size: number) => async () => {
        const started = performance.now();
        const events = await store.readAll(sessions[size]!.id);
        const ms = performance.now() - started;
        if (events.length !== SMALL_BEFORE + 1 + SMALL_AFTER) throw new Error(`read ${events.length} events`);
        return ms;
      };
      const readAfter = (size: number) => async () => {
        const started = performance.now();
        const events = await store.readAll(sessions[size]!.id, { fromSequence: SMALL_BEFORE + 2 });
        const ms = performance.now() - started;
        if (events.length !== SMALL_AFTER) throw new Error(`read ${events.length} later events`);
        return ms;
      };
      const contenders: Record<string, () => Promise<number>> = {};
      for (const size of sizes) {
        contenders[`all${size}`] = readAll(size);
        contenders[`after${size}`] = readAfter(size);
      }
      const samples = await interleavedRounds(rounds, contenders);
      const perMb = (kind: string, label: string, size: number): Figure => {
        const ms = samples[`${kind}${size}`]!.map((ms) => ms / (sessions[size]!.bytes / MB));
        return { label: `${label} ${size} MB, per MB`, value: median(ms), unit: "ms", samples: ms };
      };
      const [smallest, ...larger] = sizes;
      const rows: Row[] = [];
      for (const [kind, label] of [
        ["all", "readAll"],
        ["after", "read from the event after it"],
      ] as const) {
        const baseline = perMb(kind, label, smallest!);
        for (const size of larger) {
          const ours = perMb(kind, label, size);
          rows.push({
            suite: `${label}, a log with one ${size} MB event, time per MB`,
            ours,
            baseline,
            ratio: ours.value / baseline.value,
            // Linear: a longer line costs the same per MB, give or take the machine's noise.
            target: { op: "<=", value: 1.5, on: "ratio" },
            notes:
              `${(median(samples[`${kind}${size}`]!) / 1000).toFixed(2)} s for ${size} MB vs ` +
              `${(median(samples[`${kind}${smallest}`]!) / 1000).toFixed(3)} s for ${smallest} MB; ${rounds} rounds`,
          });
        }
      }
      return rows;
    } finally {
      await store.close();
    }
  },
};

/** A log of small events, one event of `bytes` in the middle, then small events again. Returns its size. */
async function writeLogWithBigEvent(file: string, sessionId: string, bytes: number): Promise<number> {
  const createdAt = new Date().toISOString();
  const fh = await open(file, "w");
  try {
    let sequence = 0;
    let size = 0;
    const put = async (line: string) => {
      const buf = Buffer.from(line + "\n", "utf8");
      await fh.write(buf);
      size += buf.length;
    };
    for (let i = 0; i < SMALL_BEFORE; i++) await put(replayLine(sessionId, ++sequence, createdAt));
    const big = { v: FORMAT_VERSION, id: newId(), sessionId, sequence: ++sequence, createdAt };
    await put(serializeEvent({ ...big, type: "tool_result", payload: { callId: "big", output: prose(bytes) } }));
    for (let i = 0; i < SMALL_AFTER; i++) await put(replayLine(sessionId, ++sequence, createdAt));
    return size;
  } finally {
    await fh.close();
  }
}
