import { open } from "node:fs/promises";
import { serializeEvent } from "../src/core/envelope.js";
import { FORMAT_VERSION } from "../src/index.js";
import { newId } from "../src/core/ids.js";

// Prose rather than one repeated letter, so JSON escaping and string scanning see ordinary text.
const PROSE =
  "I read src/session-store.ts and the append path looks right; next I will run the tests, check the " +
  "failing case in test/stress/crash.test.ts, and then edit the lock handling so a stale holder is taken over. ";

/** Text of `bytes` characters (ASCII, so also bytes). */
export function prose(bytes: number): string {
  let text = "";
  while (text.length < bytes) text += PROSE;
  return text.slice(0, bytes);
}

/** A message whose payload serialises to about 300 bytes, the size the benchmarks append. */
export const messageEvent = {
  type: "message",
  payload: { role: "assistant", content: prose(268) },
} as const;

/** The line the store writes for `messageEvent`, so a raw baseline writes the same bytes. */
export function messageLine(sessionId: string, sequence: number): Buffer {
  const line = serializeEvent({
    v: FORMAT_VERSION,
    id: newId(),
    sessionId,
    sequence,
    type: messageEvent.type,
    createdAt: new Date().toISOString(),
    payload: messageEvent.payload,
  });
  return Buffer.from(line + "\n", "utf8");
}

const toolInput = { path: "src/session-store.ts", old: prose(30), new: prose(36) };
const toolOutput = prose(100);

/**
 * The log line of event `sequence` in a replay test session: a turn of message, tool call,
 * tool result, in the store's own serialisation, ~300 bytes each, the size of a typical agent event
 * (docs/ARCHITECTURE.md, "On disk").
 */
export function replayLine(
  sessionId: string,
  sequence: number,
  createdAt: string,
  batch?: { first: number; last: number },
): string {
  const kind = sequence % 3;
  const callId = `call_${Math.floor(sequence / 3)}`;
  const base = { v: FORMAT_VERSION, id: newId(), sessionId, sequence, createdAt };
  if (kind === 1)
    return serializeEvent({ ...base, type: "message", payload: { role: "assistant", content: prose(110) } }, batch);
  if (kind === 2)
    return serializeEvent(
      { ...base, type: "tool_call", payload: { callId, name: "edit_file", input: toolInput } },
      batch,
    );
  return serializeEvent(
    { ...base, type: "tool_result", payload: { callId, output: toolOutput, isError: false } },
    batch,
  );
}

/**
 * Writes `events` lines of the replay workload straight to a log file: building a long tape through
 * the store would take minutes.
 */
export async function writeLog(
  file: string,
  sessionId: string,
  events: number,
  options: { oneBatch?: boolean } = {},
): Promise<void> {
  // As an undo writes the events it puts back: every line marked with the one batch they form.
  const batch = options.oneBatch ? { first: 1, last: events } : undefined;
  const fh = await open(file, "a");
  try {
    const createdAt = new Date().toISOString();
    const linesPerWrite = 16_384;
    for (let first = 1; first <= events; first += linesPerWrite) {
      let text = "";
      const last = Math.min(events, first + linesPerWrite - 1);
      for (let sequence = first; sequence <= last; sequence++)
        text += replayLine(sessionId, sequence, createdAt, batch) + "\n";
      await fh.write(text);
    }
  } finally {
    await fh.close();
  }
}
