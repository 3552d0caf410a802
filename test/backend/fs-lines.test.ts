import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readLines } from "../../src/backend/fs/lines.js";
import { tempDir } from "../helpers/fixture.js";

// The chunked line reader with lines far longer than a chunk: each line comes out
// exactly once, whole, with multi-byte characters split across chunk edges put back together.

async function logWith(content: string): Promise<string> {
  const dir = join(await tempDir(), "session-1");
  await mkdir(dir);
  const file = join(dir, "events.jsonl");
  await writeFile(file, content);
  return file;
}

async function linesOf(file: string, chunkBytes: number) {
  const out: { text: string; number: number; end: number }[] = [];
  for await (const lines of readLines(file, { chunkBytes })) out.push(...lines);
  return out;
}

describe("readLines", () => {
  it.each([1, 3, 7, 64])("gives back lines spanning many %s-byte chunks exactly, torn tail left out", async (size) => {
    const texts = ["a", "é€😀".repeat(50), "", "x".repeat(1000), "short"];
    const file = await logWith(texts.join("\n") + "\n" + "torn fragment");
    const lines = await linesOf(file, size);
    expect(lines.map((l) => l.text)).toEqual(texts);
    expect(lines.map((l) => l.number)).toEqual([1, 2, 3, 4, 5]);
    let end = 0;
    const ends = texts.map((t) => (end += Buffer.byteLength(t) + 1));
    expect(lines.map((l) => l.end)).toEqual(ends);
  });
});
