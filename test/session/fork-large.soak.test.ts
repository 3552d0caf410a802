import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type CheckpointEvent, CheckpointStore } from "../../src/index.js";
import { runChild } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const EVENTS = 200_000;

describe("fork of a long session", () => {
  it(`forks ${EVENTS.toLocaleString("en")} events in a process with a 48 MB heap, blobs too (1 round)`, async () => {
    const base = await realpath(await tempDir());
    const root = join(base, "sessions");
    const workspace = join(base, "ws");
    await mkdir(workspace);
    const store = openStore({ root, durability: "none" });
    const checkpoints = new CheckpointStore(store);
    const parent = await store.create({ workspace });
    // About 60 MB of log: more than the child's whole heap, so holding it (as events or as one
    // string) cannot fit. Three checkpoints spread through it, so the fork has blobs to carry.
    const chunk = 5000;
    for (let start = 0; start < EVENTS; start += chunk) {
      if (start % (EVENTS / 4) === 0) {
        await writeFile(join(workspace, "a.txt"), `version ${start}`);
        await checkpoints.capture(parent.id, { tool: "write_file", paths: ["a.txt"], callId: `c${start}` });
      }
      await store.appendMany(
        parent.id,
        Array.from({ length: chunk }, (_, k) => ({
          type: "message" as const,
          payload: { role: "assistant" as const, content: `step ${start + k} `.padEnd(240, "x") },
        })),
      );
    }
    const last = (await store.get(parent.id))?.lastSequence ?? 0;
    await store.close();

    const run = await runChild("fork-session.ts", [root, parent.id], { NODE_OPTIONS: "--max-old-space-size=48" });
    expect(run.stderr.slice(-2000)).not.toMatch(/heap out of memory/);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const result = JSON.parse(run.stdout) as { id: string; lastSequence: number; events: number };
    // Every event copied, plus the fork's own.
    expect(result).toMatchObject({ lastSequence: last + 1, events: last + 1 });

    const reopened = openStore({ root });
    try {
      const forked = (await reopened.readAll(result.id, { types: ["session_checkpoint"] })) as CheckpointEvent[];
      expect(forked).toHaveLength(4);
      for (const event of forked)
        for (const file of event.payload.files)
          if (file.kind === "blob")
            // the fork's own copy, wherever its backend keeps it (a file, or its pack)
            expect((await reopened.backend.readBlob(result.id, file.blob))?.toString("utf8")).toMatch(/^version \d+$/);
    } finally {
      await reopened.close();
    }
  }, 300_000);
});
