import { createHash } from "node:crypto";
import { mkdir, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatBytes } from "../../src/cli/output.js";
import { rewind } from "../../src/index.js";
import { cli, seedSession, withStore, type Seeded } from "./harness.js";
import { blobIsStored, damageBlob } from "../helpers/blob-files.js";
import { storedBlobBytes } from "../../src/maintenance/stored-bytes.js";

const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");
const blobPath = (s: Seeded, hash: string) => join(s.root, s.id, "blobs", hash.slice(0, 2), hash);

/** A blob no event names, as a capture cut short by a power loss leaves it. */
async function plantOrphanBlob(s: Seeded, content: string): Promise<string> {
  const hash = sha256(content);
  await mkdir(join(s.root, s.id, "blobs", hash.slice(0, 2)), { recursive: true });
  await writeFile(blobPath(s, hash), content);
  return hash;
}

describe("agent-tape gc", () => {
  it("--dry-run reports the unreferenced blob and its bytes, and deletes nothing", async () => {
    const s = await seedSession();
    const orphan = await plantOrphanBlob(s, "left by a crash: 31 bytes long\n");
    const run = await cli(["gc", s.id, "--dry-run", "--root", s.root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      `${s.id}  1 blob, 0 rewind archives  31 B\n` +
        `Would free 31 B: 1 blob and 0 rewind archives from session ${s.id}. Nothing was deleted.\n`,
    );
    expect(await blobIsStored(s.root, s.id, orphan)).toBe(true);
  });

  it("deletes the unreferenced blob, keeps every referenced one, and reports bytes freed", async () => {
    const s = await seedSession();
    const orphan = await plantOrphanBlob(s, "left by a crash: 31 bytes long\n");
    const referenced = sha256("one\n");
    const run = await cli(["gc", "--json", "--root", s.root]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      dryRun: false,
      bytesFreed: 31,
      blobsPruned: 1,
      archivesDropped: 0,
      sessions: [{ id: s.id, blobsPruned: 1, archivesDropped: [], bytesFreed: 31 }],
    });
    expect(await blobIsStored(s.root, s.id, orphan)).toBe(false);
    expect(await blobIsStored(s.root, s.id, referenced)).toBe(true);
    expect((await cli(["verify", s.id, "--root", s.root])).code).toBe(0);
    expect((await cli(["gc", s.id, "--root", s.root])).stdout).toBe(`Nothing to free in session ${s.id}.\n`);
  });

  it("drops rewind archives older than the newest, with the blobs only they needed; undo still works", async () => {
    const s = await seedSession();
    await withStore(s.root, async (store) => {
      // Rewind 1 cuts checkpoint #3, the only event naming the blob of "one\n" once its archive goes.
      await rewind(store, s.id, { toSequence: 2, keepUndo: 2 });
      await store.append(s.id, { type: "message", payload: { role: "user", content: "something else" } });
      await rewind(store, s.id, { toSequence: 6, keepUndo: 2 });
    });
    const records = join(s.root, s.id, "records");
    // Each archive is its record and the copy of the log bytes its rewind cut (docs/ARCHITECTURE.md, "Blobs").
    const both = ["rewind-archive-6.json", "rewind-archive-6.jsonl", "rewind-archive-8.json", "rewind-archive-8.jsonl"];
    expect((await readdir(records)).sort()).toEqual(both);
    const archiveBytes =
      (await stat(join(records, "rewind-archive-6.json"))).size +
      (await stat(join(records, "rewind-archive-6.jsonl"))).size;

    // The blob as stored: its entry in the pack, header and body (docs/format.md, "Blob packs").
    const blob = await withStore(s.root, (store) => storedBlobBytes(store.backend, s.id, sha256("one\n")));
    const dry = JSON.parse((await cli(["gc", s.id, "--dry-run", "--json", "--root", s.root])).stdout);
    expect(dry.sessions).toEqual([
      { id: s.id, blobsPruned: 1, archivesDropped: ["rewind-archive-6"], bytesFreed: archiveBytes + blob },
    ]);
    expect((await readdir(records)).sort()).toEqual(both);

    const run = await cli(["gc", s.id, "--root", s.root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      `Freed ${formatBytes(archiveBytes + blob)}: 1 blob and 1 rewind archive from session ${s.id}.`,
    );
    expect((await readdir(records)).sort()).toEqual(["rewind-archive-8.json", "rewind-archive-8.jsonl"]);
    expect(await blobIsStored(s.root, s.id, sha256("one\n"))).toBe(false);
    expect((await cli(["verify", s.id, "--root", s.root])).code).toBe(0);
    expect((await cli(["undo", s.id, "--root", s.root])).code).toBe(0);
  });

  it("over every session: collects the readable ones, reports the one it cannot read, exits 1", async () => {
    const good = await seedSession();
    const bad = await seedSession({ root: good.root });
    const orphan = await plantOrphanBlob(good, "orphan");
    const badOrphan = await plantOrphanBlob(bad, "orphan too");
    await writeFile(
      join(bad.root, bad.id, "events.jsonl"),
      "not a line of json\n" + (await readFile(join(bad.root, bad.id, "events.jsonl"), "utf8")),
    );

    const run = await cli(["gc", "--root", good.root]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`Freed 6 B: 1 blob and 0 rewind archives from 1 of 1 session.`);
    expect(run.stderr).toContain(`agent-tape: gc skipped ${bad.id}:`);
    expect(run.stderr).toContain("(LOG_CORRUPT)");
    expect(await blobIsStored(good.root, good.id, orphan)).toBe(false);
    // A tape that cannot be read cannot say which blobs it needs: nothing of it is deleted.
    expect(await blobIsStored(bad.root, bad.id, badOrphan)).toBe(true);
  });

  it("shows progress on stderr only when stderr is a terminal", async () => {
    const s = await seedSession();
    await seedSession({ root: s.root });
    const onTerminal = await cli(["gc", "--root", s.root], { isTTY: { stdout: false, stderr: true } });
    expect(onTerminal.stderr).toContain("\r\x1b[2Kgc: session 1/2");
    const piped = await cli(["gc", "--root", s.root], { isTTY: false });
    expect(piped.stderr).toBe("");
    expect(piped.stdout).toBe(onTerminal.stdout);
  });
});

describe("agent-tape verify", () => {
  it("passes (exit 0) for intact sessions", async () => {
    const s = await seedSession();
    await seedSession({ root: s.root });
    const run = await cli(["verify", "--root", s.root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^ok    ${s.id}  5 events, 1 blob$`, "m"));
    expect(run.stdout.trimEnd().split("\n").at(-1)).toBe("All 2 sessions are intact.");
  });

  it("lists a corrupted blob and a corrupt line, and exits 1", async () => {
    const s = await seedSession();
    const hash = sha256("one\n");
    // Its bytes in the session's pack flipped (a loose file would be rewritten: test/helpers/blob-files.ts).
    await damageBlob(s.root, s.id, hash, "not one\n");
    const log = join(s.root, s.id, "events.jsonl");
    const lines = (await readFile(log, "utf8")).split("\n");
    lines[3] = '{"v":1,"sequence":4,"type":"tool_result", cut off';
    await writeFile(log, lines.join("\n"));

    const run = await cli(["verify", "--root", s.root]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(
      `FAIL  ${s.id}  4 events, 1 blob: 2 problems\n` +
        `      events.jsonl line 4: ${run.stdout.match(/line 4: (.*)\n/)![1]}\n` +
        `      blob ${hash} is damaged: ${run.stdout.match(/is damaged: (.*) \(a\.txt/)![1]} (a.txt, checkpoint #3)\n` +
        "1 of 1 session has problems.\n",
    );
    expect(run.stdout).toMatch(/line 4: not valid JSON/);
    const [, actual] = run.stdout.match(/is damaged: its bytes hash to ([0-9a-f]{64}) /) ?? [];
    expect(actual).toBeDefined();
    expect(actual).not.toBe(hash);

    const json = await cli(["verify", s.id, "--json", "--root", s.root]);
    expect(json.code).toBe(1);
    const result = JSON.parse(json.stdout);
    expect(result.ok).toBe(false);
    expect(result.sessions[0].problems).toMatchObject([
      { kind: "corrupt_line", line: 4 },
      { kind: "blob_corrupt", hash, referencedBy: { path: "a.txt", sequence: 3, type: "session_checkpoint" } },
    ]);
  });

  it("finds a missing blob and a sequence that does not increase", async () => {
    const s = await seedSession();
    const hash = sha256("one\n");
    await withStore(s.root, async (store) => {
      const locked = await store.backend.lock(s.id);
      await locked.deleteBlob(hash); // as a deleter would: gone from the backend's view, wherever it was kept
      await locked.release();
    });
    const log = join(s.root, s.id, "events.jsonl");
    const lines = (await readFile(log, "utf8")).split("\n");
    lines.splice(2, 0, lines[1]!); // event #2 twice
    await writeFile(log, lines.join("\n"));

    const run = await cli(["verify", s.id, "--json", "--root", s.root]);
    expect(run.code).toBe(1);
    const [session] = JSON.parse(run.stdout).sessions;
    expect(session.problems).toMatchObject([
      { kind: "corrupt_line", line: 3, message: "events.jsonl line 3: sequence 2 does not follow 2" },
      { kind: "blob_missing", hash },
    ]);
  });

  it("checks the blobs a rewind archive keeps for undo", async () => {
    const s = await seedSession();
    expect((await cli(["rewind", s.id, "--to", "2", "--root", s.root])).code).toBe(0);
    // Only the archive (of the cut checkpoint #3) still names the blob of "one\n".
    const hash = sha256("one\n");
    await damageBlob(s.root, s.id, hash, "damaged");
    const run = await cli(["verify", s.id, "--root", s.root]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`blob ${hash} is damaged`);
    expect(run.stdout).toContain("(a.txt, checkpoint #3 in rewind-archive-6)");
  });

  it("fails with SESSION_NOT_FOUND (exit 1) for an unknown id", async () => {
    const s = await seedSession();
    const run = await cli(["verify", "missing", "--root", s.root]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("(SESSION_NOT_FOUND)");
  });

  it("shows progress on stderr only when stderr is a terminal", async () => {
    const s = await seedSession();
    await seedSession({ root: s.root });
    const onTerminal = await cli(["verify", "--root", s.root], { isTTY: { stderr: true } });
    expect(onTerminal.stderr).toContain("\r\x1b[2Kverify session 1/2");
    expect(onTerminal.stderr.endsWith("\r\x1b[2K")).toBe(true); // the status line is cleared before results
    const piped = await cli(["verify", "--root", s.root]);
    expect(piped.stderr).toBe("");
    expect(piped.stdout).toBe(onTerminal.stdout);
  });
});
