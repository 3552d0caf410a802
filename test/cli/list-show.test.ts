import { appendFile, readFile, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, seedSession, withStore } from "./harness.js";
import { tempDir } from "../helpers/fixture.js";

describe("agent-tape list", () => {
  it("lists sessions newest first with id, title, last sequence, last activity and size", async () => {
    const older = await seedSession({ title: "older session" });
    const newer = await seedSession({ root: older.root, title: "newer session" });
    // Activity, not creation, decides the order: touch the older one last. Activity times have millisecond
    // resolution, so let the clock move first or the two sessions tie and the id breaks the tie.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await withStore(older.root, (store) =>
      store.append(older.id, { type: "message", payload: { role: "user", content: "again" } }),
    );

    const run = await cli(["list", "--root", older.root]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    const [header, first, second, ...rest] = run.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^ID\s+TITLE\s+LAST #\s+LAST ACTIVITY\s+SIZE$/);
    expect(rest).toEqual([]);
    expect(first).toMatch(
      new RegExp(`^${older.id}\\s+older session\\s+#6\\s+(just now|\\d+[smh] ago)\\s+[\\d.]+ (B|KiB)$`),
    );
    expect(second).toMatch(new RegExp(`^${newer.id}\\s+newer session\\s+#5\\s+`));
  });

  it("--json gives every session with its last sequence and bytes on disk", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["list", "--json", "--root", root]);
    expect(run.code).toBe(0);
    const sessions = JSON.parse(run.stdout);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({
      id,
      title: "fix the failing test",
      lastSequence: 5,
    });
    expect(sessions[0]).not.toHaveProperty("events");
    expect(sessions[0].bytes).toBeGreaterThan(0);
  });

  it("after a rewind shows the marker's sequence, the highest ever written", async () => {
    const { root, id } = await seedSession();
    expect((await cli(["rewind", id, "--to", "2", "--root", root])).code).toBe(0);
    const run = await cli(["list", "--root", root]);
    expect(run.stdout).toMatch(new RegExp(`^${id}\\s+fix the failing test\\s+#6\\s+`, "m")); // #1, #2, marker #6
  });

  it("reads each session's tail and record, not its log: a 256 MB hole mid-log costs nothing", async () => {
    const { root, id } = await seedSession();
    const log = join(root, id, "events.jsonl");
    const lines = (await readFile(log, "utf8")).split("\n");
    // The first four lines, a 256 MB sparse run of NUL bytes (no disk used), then the last line: a
    // reader of the whole log would have to wade through one 256 MB "line".
    const head = `${lines.slice(0, 4).join("\n")}\n`;
    await writeFile(log, head);
    await truncate(log, Buffer.byteLength(head) + 256 * 1024 * 1024);
    await appendFile(log, `\n${lines[4]}\n`);
    const run = await cli(["list", "--json", "--root", root]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([expect.objectContaining({ id, lastSequence: 5 })]);
  }, 20_000);

  it("says so when the root holds no sessions", async () => {
    const root = await tempDir();
    const run = await cli(["list", "--root", root]);
    expect(run).toMatchObject({ code: 0, stdout: `No sessions under ${root}.\n` });
    expect(JSON.parse((await cli(["list", "--json", "--root", root])).stdout)).toEqual([]);
  });

  it("still shows a session whose last line is corrupt, with the reason", async () => {
    const { root, id } = await seedSession();
    await appendFile(join(root, id, "events.jsonl"), "{not json}\n");
    const run = await cli(["list", "--root", root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`${id}\\s+unreadable: LOG_CORRUPT`));
    const [listed] = JSON.parse((await cli(["list", "--json", "--root", root])).stdout);
    expect(listed).toMatchObject({ id, error: { code: "LOG_CORRUPT" } });
  });
});

describe("agent-tape show", () => {
  it("prints one line per event: sequence, time, type and a summary", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["show", id, "--root", root]);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(7);
    const time = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ";
    expect(lines[0]).toMatch(new RegExp(`^1  ${time}  message\\s+user: make a.txt say two$`));
    expect(lines[1]).toMatch(/^2 .* tool_call\s+write_files \[c1\] \{"paths":\["a.txt","b.txt"\]\}$/);
    expect(lines[2]).toMatch(/^3 .* session_checkpoint\s+before write_files: 2 files — a.txt, b.txt \(new\)$/);
    // Below the checkpoint, what its tool did to each path (a.txt "one" -> "two", b.txt made).
    expect(lines[3]).toBe("   modified  a.txt  +1 \u22121");
    expect(lines[4]).toBe("   created   b.txt  +1 \u22120");
    expect(lines[5]).toMatch(/^4 .* tool_result\s+\[c1\] wrote 2 files$/);
    expect(lines[6]).toMatch(/^5 .* message\s+assistant: Done\.$/);
  });

  it("--diff prints each checkpoint's unified diffs below its paths", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["show", id, "--diff", "--root", root]);
    expect(run.stdout).toContain(
      "   modified  a.txt  +1 \u22121\n" +
        "   created   b.txt  +1 \u22120\n" +
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n-one\n+two\n" +
        "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1,1 @@\n+new file\n",
    );
  });

  it("--from and --to cut the range; --type keeps one kind of event", async () => {
    const { root, id } = await seedSession();
    const range = await cli(["show", id, "--from", "2", "--to", "3", "--root", root]);
    expect(
      range.stdout
        .trimEnd()
        .split("\n")
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(["2", "3", "", ""]); // the checkpoint's two paths below it
    const messages = await cli(["show", id, "--type", "message", "--root", root]);
    expect(
      messages.stdout
        .trimEnd()
        .split("\n")
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(["1", "5"]);
  });

  it("--json prints the stored events as JSONL, exactly as the library reads them", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["show", id, "--json", "--from", "3", "--root", root]);
    expect(run.code).toBe(0);
    const printed = run.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    const stored = await withStore(root, (store) => store.readAll(id, { fromSequence: 3 }));
    expect(printed).toEqual(stored);
  });

  it("fails with SESSION_NOT_FOUND (exit 1) for an unknown session", async () => {
    const { root } = await seedSession();
    const run = await cli(["show", "no-such-session", "--root", root]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/^agent-tape: no session "no-such-session" under .*\(SESSION_NOT_FOUND\)\n/);
  });

  it("stops at a corrupt line with LOG_CORRUPT, naming the line, and points at verify", async () => {
    const { root, id } = await seedSession();
    const log = join(root, id, "events.jsonl");
    const lines = (await readFile(log, "utf8")).split("\n");
    lines[1] = "garbage";
    await writeFile(log, lines.join("\n"));
    const run = await cli(["show", id, "--root", root]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("events.jsonl:2:");
    expect(run.stderr).toContain("(LOG_CORRUPT)");
    expect(run.stderr).toContain("agent-tape verify");
  });
});
