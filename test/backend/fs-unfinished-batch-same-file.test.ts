// unfinishedBatchStart checks the lines of a batch the log ends inside, from the batch's first line on. `lastEvent`
// calls it with no lock, on the log it opened; a rewind cutting inside a batch meanwhile renames a new log over the
// path (docs/ARCHITECTURE.md, "On disk"). Read by path, the check then compared the old file's last line with the
// new file's lines and called a healthy tape LOG_CORRUPT: it must read the file it was given.
import { open, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { serializeEvent } from "../../src/core/envelope.js";
import { readTail } from "../../src/backend/fs/lines.js";
import { unfinishedBatchStart } from "../../src/backend/fs/unfinished-batch.js";
import { tempDir } from "../helpers/fixture.js";

const line = (sequence: number, batch?: { first: number; last: number }) =>
  `${serializeEvent(
    {
      v: 1,
      id: `e${sequence}`,
      sessionId: "s1",
      sequence,
      type: "message",
      createdAt: "2026-12-01T00:00:00.000Z",
      payload: { role: "user", content: `event ${sequence}` },
    },
    batch,
  )}\n`;

it("reads the lines of the file it was handed, even once another file was renamed over its path", async () => {
  const dir = await tempDir("agent-tape-unfinished-same-file-");
  const file = join(dir, "events.jsonl");
  const kept = [1, 2, 3, 4, 5].map((n) => line(n)).join("");
  const batch = { first: 6, last: 8 };
  await writeFile(file, kept + line(6, batch) + line(7, batch)); // a batch still being written
  const fh = await open(file, "r");
  try {
    const tail = await readTail(fh);
    // A rewind to 6 meanwhile: the kept part of the batch closed at 6, written to a new file renamed over the log.
    const next = join(dir, "next.jsonl");
    await writeFile(next, kept + line(6) + line(9));
    await rename(next, file);
    expect(await unfinishedBatchStart(file, fh, tail)).toBe(Buffer.byteLength(kept));
  } finally {
    await fh.close();
  }
});
