import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, seedSession } from "./harness.js";

describe("agent-tape gc with a retention policy", () => {
  it("--keep-newest deletes the older session; --dry-run first only says so", async () => {
    const older = await seedSession({ title: "older" });
    const newer = await seedSession({ root: older.root, title: "newer" });
    const dry = await cli(["gc", "--keep-newest", "1", "--dry-run", "--root", older.root]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(
      new RegExp(`^Would delete session ${older.id} \\(beyond --keep-newest, [0-9.]+ (B|KiB)\\)\\.\\n`),
    );
    const listed = JSON.parse((await cli(["list", "--json", "--root", older.root])).stdout);
    expect(listed.map((s: { id: string }) => s.id)).toEqual([newer.id, older.id]);

    const run = await cli(["gc", "--keep-newest", "1", "--json", "--root", older.root]);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.retention.deleted).toMatchObject([{ sessionId: older.id, reason: "count" }]);
    expect(report.bytesFreed).toBe(report.retention.deleted[0].bytes);
    const after = JSON.parse((await cli(["list", "--json", "--root", older.root])).stdout);
    expect(after.map((s: { id: string }) => s.id)).toEqual([newer.id]);
  });

  it("list --json splits each session's bytes into log, blobs and records", async () => {
    const s = await seedSession();
    const [listed] = JSON.parse((await cli(["list", "--json", "--root", s.root])).stdout);
    const log = (await readFile(join(s.root, s.id, "events.jsonl"))).length;
    expect(listed.usage).toMatchObject({ log, blobCount: 1, records: 0 });
    expect(listed.usage.blobs).toBeGreaterThan(0);
    expect(listed.bytes).toBeGreaterThan(log + listed.usage.blobs);
  });

  it("a bad limit is a usage error (exit 2)", async () => {
    const s = await seedSession();
    const run = await cli(["gc", "--keep-newest=-1", "--root", s.root]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--keep-newest needs a whole number of at least 0");
    expect((await cli(["gc", "--max-bytes", "12X", "--root", s.root])).code).toBe(2);
  });
});
