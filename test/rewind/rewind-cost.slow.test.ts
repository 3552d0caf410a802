import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, rewind } from "../../src/index.js";
import { bytesRead } from "../helpers/bytes-read.js";
import { openStore, tempDir } from "../helpers/fixture.js";
import { appendMessages } from "../helpers/long-tape.js";
import { rounds } from "../helpers/rounds.js";

// How long the tape is: 8,000 events of ~400 bytes (3.2 MB) in npm test, 40,000 (16 MB) when soaking. The bound is a
// tenth of the log, and a rewind that reads the whole log reads at least all of it, at either length.
const EVENTS = rounds(8_000, 40_000);

/** ~400-byte messages, 2000 to an append: a long tape, quickly. */
const LONG = { bytes: 400, batch: 2000 };

describe("a rewind's reading follows what it cuts", () => {
  it(`cutting the last 10 of ${EVENTS} events (conversation) reads a few KB of the log, not all of it`, async () => {
    const root = await tempDir();
    const store = openStore({ root, durability: "none" });
    try {
      const { id } = await store.create();
      await appendMessages(store, id, EVENTS - 10, LONG);
      // The last 10 on their own, as an agent appends them: a cut inside one appendMany still copies the log.
      for (let k = 0; k < 10; k++)
        await store.append(id, { type: "message", payload: { role: "user", content: `last ${k} `.padEnd(400, "z") } });
      const logBytes = (await stat(join(root, id, "events.jsonl"))).size;
      const before = await bytesRead();
      const report = await rewind(store, id, { toSequence: EVENTS - 10, mode: "conversation", keepUndo: 0 });
      const read = (await bytesRead()) - before;
      expect(report.eventsRemoved).toBe(10);
      // Planning, truncating and pruning each read the whole log once: more than 3x its size; then the
      // truncation still copied the kept part. Now the cut is found backwards and made in place.
      // a whole-log read is >= 1; the rest is headroom (bytes-read.ts)
      expect(read / logBytes).toBeLessThan(0.1);
    } finally {
      await store.close();
    }
  }, 60_000);

  it(`a beforeCallId target 10 events from the end of ${EVENTS} is found reading a few KB, not the log`, async () => {
    const root = await tempDir();
    const store = openStore({ root, durability: "none" });
    try {
      const { id } = await store.create();
      await appendMessages(store, id, EVENTS, LONG);
      const before = (await store.get(id))!.lastSequence;
      await store.append(id, { type: "tool_call", payload: { callId: "c9", name: "edit", input: {} } });
      for (let k = 0; k < 9; k++)
        await store.append(id, { type: "message", payload: { role: "user", content: `after ${k}` } });
      const logBytes = (await stat(join(root, id, "events.jsonl"))).size;
      const bytesBefore = await bytesRead();
      const report = await rewind(store, id, { beforeCallId: "c9", mode: "conversation", dryRun: true });
      const read = (await bytesRead()) - bytesBefore;
      expect(report.targetSequence).toBe(before);
      expect(report.eventsRemoved).toBe(10);
      // Found going forward from the tape's start, it read the whole log first.
      // a whole-log read is >= 1; the rest is headroom (bytes-read.ts)
      expect(read / logBytes).toBeLessThan(0.1);
    } finally {
      await store.close();
    }
  }, 60_000);

  it(`undoing a 1-file shell command (files, keepUndo 0) after ${EVENTS} events reads a few KB, not all`, async () => {
    const root = await tempDir();
    const workspace = join(root, "ws");
    await mkdir(workspace);
    for (let k = 0; k < 20; k++) await writeFile(join(workspace, `f${k}.txt`), `file ${k}\n`);
    const store = openStore({ root: join(root, "store"), durability: "none" });
    try {
      const { id } = await store.create({ workspace });
      await appendMessages(store, id, EVENTS, LONG);
      const checkpoints = new CheckpointStore(store);
      await checkpoints.aroundCommand(id, { tool: "bash" }, () => undefined); // the index: every file stored
      const target = (await store.get(id))!.lastSequence;
      await checkpoints.aroundCommand(id, { tool: "bash" }, () => writeFile(join(workspace, "f7.txt"), "edited\n"));
      const logBytes = (await stat(join(root, "store", id, "events.jsonl"))).size;
      const before = await bytesRead();
      const report = await rewind(store, id, { toSequence: target, mode: "files", keepUndo: 0 });
      const read = (await bytesRead()) - before;
      expect(report.filesRestored).toBe(1);
      expect(await readFile(join(workspace, "f7.txt"), "utf8")).toBe("file 7\n");
      // The prune read the whole log to learn that the index still points at the bytes the rewind replaced.
      expect(read / logBytes).toBeLessThan(0.1);
    } finally {
      await store.close();
    }
  }, 60_000);
});
