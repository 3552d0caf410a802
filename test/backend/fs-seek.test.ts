import { open, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { keptEndFor } from "../../src/backend/fs/seek.js";
import { serializeEvent } from "../../src/core/envelope.js";
import { tempDir } from "../helpers/fixture.js";

function line(sequence: number, content = "x"): string {
  return `${serializeEvent({
    v: 1,
    id: `e${sequence}`,
    sessionId: "s1",
    sequence,
    type: "message",
    createdAt: "2026-12-01T00:00:00.000Z",
    payload: { role: "user", content },
  })}\n`;
}

async function seek(text: string, sequence: number) {
  const file = join(await tempDir(), "events.jsonl");
  await writeFile(file, text);
  const fh = await open(file, "r");
  try {
    return await keptEndFor(fh, (await fh.stat()).size, sequence);
  } finally {
    await fh.close();
  }
}

describe("keptEndFor: where the events up to a sequence end, read backwards", () => {
  const lines = [1, 2, 3, 7, 8].map((n) => line(n)); // a gap, as a rewind marker leaves
  const log = lines.join("");
  const endOf = (count: number) => Buffer.byteLength(lines.slice(0, count).join(""));

  it("finds the end of each kept prefix, gaps included", async () => {
    expect(await seek(log, 8)).toEqual({ offset: endOf(5), sequence: 8 });
    expect(await seek(log, 100)).toEqual({ offset: endOf(5), sequence: 8 });
    expect(await seek(log, 7)).toEqual({ offset: endOf(4), sequence: 7 });
    expect(await seek(log, 5)).toEqual({ offset: endOf(3), sequence: 3 }); // in the gap
    expect(await seek(log, 1)).toEqual({ offset: endOf(1), sequence: 1 });
    expect(await seek(log, 0)).toEqual({ offset: 0, sequence: 0 });
  });

  it("passes over a torn fragment at the end, and handles an empty or all-torn file", async () => {
    expect(await seek(`${log}{"v":1,"id":"torn`, 100)).toEqual({ offset: endOf(5), sequence: 8 });
    expect(await seek("", 3)).toEqual({ offset: 0, sequence: 0 });
    expect(await seek('{"v":1,"id":"torn', 3)).toEqual({ offset: 0, sequence: 0 });
  });

  it("reads lines longer than its 64 KB steps, across step boundaries", async () => {
    const long = [1, 2, 3, 4].map((n) => line(n, "y".repeat(150_000 + n)));
    const text = long.join("");
    expect(await seek(text, 2)).toEqual({ offset: Buffer.byteLength(long.slice(0, 2).join("")), sequence: 2 });
    expect(await seek(text, 0)).toEqual({ offset: 0, sequence: 0 });
  });

  it("gives up (undefined) at a line that does not parse, so the caller reads forwards and names it", async () => {
    expect(await seek(`${lines[0]}not json\n${lines[1]}`, 1)).toBeUndefined();
    // A damaged line before the point it stops at is not its business.
    expect(await seek(`not json\n${lines[0]}${lines[1]}`, 1)).toEqual({
      offset: Buffer.byteLength(`not json\n${lines[0]}`),
      sequence: 1,
    });
  });
});
