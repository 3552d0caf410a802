// A rewrite of the log (a rewind's truncation) that fails part way — disk full, a file-size
// limit — must remove its temp file, and temp files a killed process left beside the log or its records must be
// swept by the next lock holder and by gc. The failing write is real: a child process under `ulimit -f`.
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gc } from "../../src/index.js";
import { runChild } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

/** A session whose log is ~720 KB: 600 messages of 1 KB, so keeping 590 of them copies far past 256 KiB. */
async function longSession() {
  const root = await tempDir("agent-tape-leftovers-");
  const store = openStore({ root, durability: "none" });
  const { id } = await store.create();
  const content = "x".repeat(1000);
  for (let i = 0; i < 6; i++)
    await store.appendMany(
      id,
      Array.from({ length: 100 }, () => ({ type: "message" as const, payload: { role: "user" as const, content } })),
    );
  await store.close();
  return { root, id };
}

/** Temp files (`.tmp-…`) in the session folder and in its records folder. */
async function tempFiles(root: string, id: string): Promise<string[]> {
  const beside = (await readdir(join(root, id))).filter((name) => name.startsWith(".tmp-"));
  const records = (await readdir(join(root, id, "records"))).filter((name) => name.startsWith(".tmp-"));
  return [...beside, ...records.map((name) => `records/${name}`)];
}

describe("a failed rewrite of the log", () => {
  it("a truncation past the file-size limit fails REWIND_FAILED and leaves no temp file (3 rounds)", async () => {
    const { root, id } = await longSession();
    const log = join(root, id, "events.jsonl");
    const before = await readFile(log);
    for (let round = 0; round < 3; round++) {
      const run = await runChild(
        "rewind-once.ts",
        [root, id, "590"],
        {},
        {
          fileSizeKiB: 256,
          pastFileSize: "fail",
        },
      );
      expect(run.stderr).toBe("");
      expect(JSON.parse(run.stdout)).toEqual({ ok: false, code: "REWIND_FAILED" });
      expect(await tempFiles(root, id)).toEqual([]);
      expect((await readFile(log)).equals(before)).toBe(true); // rolled back: the log as it was
    }
  });
});

describe("temp files a killed process left behind", () => {
  /** A rewind killed by SIGXFSZ while copying the kept part of the log: its temp file and its intent stay. */
  async function killedMidRewrite(root: string, id: string): Promise<string[]> {
    const run = await runChild("rewind-once.ts", [root, id, "590"], {}, { fileSizeKiB: 256, pastFileSize: "die" });
    expect(run.signal).toBe("SIGXFSZ");
    const left = await tempFiles(root, id);
    expect(left).toEqual([expect.stringMatching(/^\.tmp-events\.jsonl-[0-9a-f]+$/)]);
    return left;
  }

  it("are swept by the next writer when it takes the lock (3 rounds)", async () => {
    for (let round = 0; round < 3; round++) {
      // A fresh session each round: the cut falls inside a batch only once (then the kept part ends one),
      // and only such a cut copies the log; any other is made in place.
      const { root, id } = await longSession();
      await killedMidRewrite(root, id);
      const store = openStore({ root, lockStaleMs: 1000 });
      await store.append(id, { type: "message", payload: { role: "user", content: "next" } });
      expect(await tempFiles(root, id)).toEqual([]);
      await store.close();
    }
  });

  it("are swept by gc, and counted", async () => {
    const { root, id } = await longSession();
    const store = openStore({ root, lockStaleMs: 1000 });
    const left = await killedMidRewrite(root, id);
    await store.append(id, { type: "message", payload: { role: "user", content: "lease held" } });
    // Planted while this store holds the lease, so no new lock acquisition sweeps it: only gc can.
    await writeFile(join(root, id, left[0]!), "half a copy\n");
    await writeFile(join(root, id, "records", ".tmp-rewind-intent.json-ba9876543210"), "{ half");
    const expected = [left[0]!, "records/.tmp-rewind-intent.json-ba9876543210"].sort();
    const dry = await gc(store, { dryRun: true });
    expect(dry.sessions[0]!.leftoverFiles.sort()).toEqual(expected);
    expect(await tempFiles(root, id)).toHaveLength(2);
    const report = await gc(store);
    expect(report.sessions[0]!.leftoverFiles.sort()).toEqual(expected);
    expect(await tempFiles(root, id)).toEqual([]);
  });
});
