import { readFile, readdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, DIFF_LIMITS } from "../../src/index.js";
import { cli, seedSession, withStore } from "./harness.js";
import { tempDir } from "../helpers/fixture.js";

const ESC = "\x1b[";
const sequences = (root: string, id: string) =>
  withStore(root, async (store) => (await store.readAll(id)).map((e) => e.sequence));

describe("agent-tape rewind", () => {
  it("--dry-run prints the plan per path and changes neither files nor tape", async () => {
    const { root, workspace, id } = await seedSession();
    const run = await cli(["rewind", id, "--to", "2", "--dry-run", "--root", root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      `Dry run: rewinding ${id} to #2 (mode all) would:\n` +
        "  restore  a.txt  +1 \u22121\n" +
        "  delete   b.txt  +0 \u22121\n" +
        "1 file restored, 1 deleted (+1 \u22122 lines); 3 events to remove. Nothing was changed.\n",
    );
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("two\n");
    expect(await readdir(workspace)).toContain("b.txt");
    expect(await sequences(root, id)).toEqual([1, 2, 3, 4, 5]);
  });

  it("--dry-run --diff adds each file's unified diff: plain when piped, coloured on a terminal", async () => {
    const { root, id } = await seedSession();
    const piped = await cli(["rewind", id, "--to", "2", "--dry-run", "--diff", "--root", root]);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toBe(
      `Dry run: rewinding ${id} to #2 (mode all) would:\n` +
        "  restore  a.txt  +1 \u22121\n" +
        "  delete   b.txt  +0 \u22121\n" +
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n-two\n+one\n" +
        "--- a/b.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-new file\n" +
        "1 file restored, 1 deleted (+1 \u22122 lines); 3 events to remove. Nothing was changed.\n",
    );
    const tty = await cli(["rewind", id, "--to", "2", "--dry-run", "--diff", "--root", root], { isTTY: true });
    expect(tty.stdout).toContain(`${ESC}32m+one${ESC}39m`);
    expect(tty.stdout).toContain(`${ESC}31m-two${ESC}39m`);
    expect(tty.stdout).toContain(`${ESC}1m--- a/a.txt${ESC}22m`);
  });

  it("--dry-run --diff counts a binary file and one over the diff bound in bytes, and says why no diff", async () => {
    const { root, workspace, id } = await seedSession();
    await writeFile(join(workspace, "logo.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 4, 5]));
    await writeFile(join(workspace, "big.txt"), "small\n");
    await withStore(root, async (store) => {
      await new CheckpointStore(store).around(id, { tool: "edit", paths: ["logo.png", "big.txt"] }, async () => {
        await writeFile(join(workspace, "logo.png"), Buffer.alloc(2048, 0)); // 2 KiB of NULs
        await writeFile(join(workspace, "big.txt"), `${"x".repeat(DIFF_LIMITS.maxBytes)}\n`);
      });
    });
    // #5 is the last event before the edit (its checkpoint and after-state): rewinding to it puts back the small files.
    const run = await cli(["rewind", id, "--to", "5", "--dry-run", "--diff", "--root", root]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(
      `Dry run: rewinding ${id} to #5 (mode all) would:\n` +
        "  restore  big.txt   +6 B \u22121.0 MiB too large\n" +
        "  restore  logo.png  +10 B \u22122.0 KiB binary\n" +
        "(big.txt: no line diff, too large)\n" +
        "(logo.png: no line diff, binary)\n" +
        "2 files restored, 0 deleted (+16 B \u22121.0 MiB); 2 events to remove. Nothing was changed.\n",
    );
  });

  it("restores the files, cuts the tape, appends a marker and reports it", async () => {
    const { root, workspace, id } = await seedSession();
    const run = await cli(["rewind", id, "--to", "2", "--root", root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      "1 file restored, 1 deleted (+1 \u22122 lines); 3 events removed; 0 blobs pruned. Rewind marker: #6.",
    );
    expect(run.stdout).toContain(`Undo it with: agent-tape undo ${id}`);
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("one\n");
    expect(await readdir(workspace)).not.toContain("b.txt");
    expect(await sequences(root, id)).toEqual([1, 2, 6]);
  });

  it("--json prints the library's report", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["rewind", id, "--to", "2", "--json", "--root", root]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      targetSequence: 2,
      lastSequence: 5,
      dryRun: false,
      mode: "all",
      filesRestored: 1,
      filesDeleted: 1,
      skipped: [],
      changes: [
        { path: "a.txt", action: "restore", diff: { unit: "lines", insertions: 1, deletions: 1 } },
        { path: "b.txt", action: "delete", diff: { unit: "lines", insertions: 0, deletions: 1 } },
      ],
      diffTotals: { lines: { insertions: 1, deletions: 2 }, bytes: { insertions: 0, deletions: 0 } },
      eventsRemoved: 3,
      blobsPruned: 0,
      markerSequence: 6,
    });
  });

  it("--mode conversation cuts the tape and leaves the files alone", async () => {
    const { root, workspace, id } = await seedSession();
    const run = await cli(["rewind", id, "--to", "2", "--mode", "conversation", "--root", root]);
    expect(run.code).toBe(0);
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("two\n");
    expect(await sequences(root, id)).toEqual([1, 2, 6]);
  });

  it("colours paths by action on a terminal: restore green, delete red", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["rewind", id, "--to", "2", "--dry-run", "--root", root], { isTTY: true });
    expect(run.stdout).toContain(`${ESC}32ma.txt${ESC}39m`);
    expect(run.stdout).toContain(`${ESC}31mb.txt${ESC}39m`);
  });

  it("prints no colour when piped, or when NO_COLOR is set on a terminal", async () => {
    const { root, id } = await seedSession();
    const piped = await cli(["rewind", id, "--to", "2", "--dry-run", "--root", root], { isTTY: false });
    const noColour = await cli(["rewind", id, "--to", "2", "--dry-run", "--root", root], {
      isTTY: true,
      env: { NO_COLOR: "1" },
    });
    expect(piped.stdout).toContain("restore  a.txt");
    expect(piped.stdout).not.toContain(ESC);
    expect(noColour.stdout).toBe(piped.stdout);
  });

  it("is a usage error (exit 2) without --to, with a bad --to or a bad --mode", async () => {
    const { root, id } = await seedSession();
    for (const args of [[], ["--to", "two"], ["--to", "-1"], ["--to", "2", "--mode", "everything"], ["--to"]]) {
      const run = await cli(["rewind", id, ...args, "--root", root]);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr).toContain("agent-tape rewind --help");
    }
    expect(await sequences(root, id)).toEqual([1, 2, 3, 4, 5]);
  });

  it("fails (exit 1) with SEQUENCE_OUT_OF_RANGE past the end of the tape", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["rewind", id, "--to", "99", "--root", root]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("(SEQUENCE_OUT_OF_RANGE)");
  });
});

describe("agent-tape undo", () => {
  it("puts back the files and the events the last rewind removed", async () => {
    const { root, workspace, id } = await seedSession();
    expect((await cli(["rewind", id, "--to", "2", "--root", root])).code).toBe(0);
    const run = await cli(["undo", id, "--root", root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Undid rewind #6 of ${id}:`);
    expect(run.stdout).toContain("3 events put back (as #7-#9). Undo marker: #10.");
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("two\n");
    expect(await readFile(join(workspace, "b.txt"), "utf8")).toBe("new file\n");
    expect(await sequences(root, id)).toEqual([1, 2, 6, 7, 8, 9, 10]);
  });

  it("--dry-run --diff shows what the undo would do to each file, and its diff", async () => {
    const { root, id } = await seedSession();
    await cli(["rewind", id, "--to", "2", "--root", root]);
    const run = await cli(["undo", id, "--dry-run", "--diff", "--root", root]);
    expect(run.stdout).toContain("  restore  a.txt  +1 \u22121\n  restore  b.txt  +1 \u22120\n");
    expect(run.stdout).toContain("--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n-one\n+two\n");
    expect(run.stdout).toContain("--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1,1 @@\n+new file\n");
  });

  it("--json prints the undo report", async () => {
    const { root, id } = await seedSession();
    await cli(["rewind", id, "--to", "2", "--root", root]);
    const report = JSON.parse((await cli(["undo", id, "--json", "--root", root])).stdout);
    expect(report).toMatchObject({ undoneMarker: 6, eventsRestored: 3, filesRestored: 2, markerSequence: 10 });
  });

  it("fails (exit 1) with NOTHING_TO_UNDO when the last event is not a rewind", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["undo", id, "--root", root]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/Nothing to undo .*\(NOTHING_TO_UNDO\)/);
    const json = await cli(["undo", id, "--json", "--root", root]);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: "NOTHING_TO_UNDO" } });
  });
});

describe("agent-tape fork", () => {
  it("copies the tape up to --at into a new session with the given title", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["fork", id, "--at", "3", "--title", "try another way", "--json", "--root", root]);
    expect(run.code).toBe(0);
    const info = JSON.parse(run.stdout);
    expect(info).toMatchObject({ title: "try another way", parent: { id, atSequence: 3 }, lastSequence: 4 });
    const events = await withStore(root, (store) => store.readAll(info.id));
    expect(events.map((e) => e.type)).toEqual(["message", "tool_call", "session_checkpoint", "session_fork"]);
    // The copied checkpoint's blob came along: the fork verifies clean.
    expect((await cli(["verify", info.id, "--root", root])).code).toBe(0);
  });

  it("prints the new id for a person, and forks the whole tape by default", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["fork", id, "--id", "my-fork", "--root", root]);
    expect(run).toMatchObject({ code: 0, stdout: `Forked ${id} at #5 into my-fork\n` });
  });

  it("--workspace fills a new folder with the files as they were at --at; the fork rewinds there only", async () => {
    const { root, workspace, id } = await seedSession();
    const child = join(await realpath(await tempDir("agent-tape-cli-fork-")), "try-2");
    const run = await cli(["fork", id, "--at", "2", "--workspace", child, "--id", "try-2", "--root", root]);
    expect(run.stderr).toBe("");
    expect(run).toMatchObject({
      code: 0,
      stdout: `Forked ${id} at #2 into try-2, its files in ${child}
  1 file (4 B), 0 symlinks, 0 folders
`,
    });
    // At #2 the tool had not run yet: a.txt said one and b.txt did not exist.
    expect(await readdir(child)).toEqual(["a.txt"]);
    expect(await readFile(join(child, "a.txt"), "utf8")).toBe("one\n");
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("two\n");
    // The fork's rewind goes to its folder, never the parent's.
    await withStore(root, (store) =>
      new CheckpointStore(store).around("try-2", { tool: "edit", paths: ["a.txt"] }, () =>
        writeFile(join(child, "a.txt"), "three\n"),
      ),
    );
    expect(await readFile(join(child, "a.txt"), "utf8")).toBe("three\n");
    expect((await cli(["rewind", "try-2", "--to", "2", "--root", root])).code).toBe(0);
    expect(await readFile(join(child, "a.txt"), "utf8")).toBe("one\n");
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("two\n");
    expect(await readdir(workspace)).toEqual(["a.txt", "b.txt"]);
  });

  it("--workspace --json prints the report; a folder that is not empty is refused (WORKSPACE_NOT_EMPTY)", async () => {
    const { root, workspace, id } = await seedSession();
    const child = join(await realpath(await tempDir("agent-tape-cli-fork-")), "ws");
    const json = await cli(["fork", id, "--workspace", child, "--json", "--root", root]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      workspace: child,
      files: 2,
      skipped: [],
      session: { workspace: child, parent: { id, atSequence: 5 } },
    });
    const busy = await cli(["fork", id, "--workspace", workspace, "--root", root]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain("(WORKSPACE_NOT_EMPTY)");
  });

  it("--before-call forks just before that tool call, --workspace too; with --at it is a usage error", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["fork", id, "--before-call", "c1", "--id", "before-c1", "--root", root]);
    expect(run).toMatchObject({ code: 0, stdout: `Forked ${id} at #1 into before-c1\n` });
    const child = join(await realpath(await tempDir("agent-tape-cli-fork-")), "before-c1");
    const folder = await cli(["fork", id, "--before-call", "c1", "--workspace", child, "--json", "--root", root]);
    expect(folder.code).toBe(0);
    expect(JSON.parse(folder.stdout)).toMatchObject({ session: { parent: { id, atSequence: 1 } } });
    expect(await readFile(join(child, "a.txt"), "utf8")).toBe("one\n");
    const both = await cli(["fork", id, "--at", "2", "--before-call", "c1", "--root", root]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("at most one of --at <seq> and --before-call <toolCallId>");
    const unknown = await cli(["fork", id, "--before-call", "nope", "--root", root]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('No tool call "nope"');
  });

  it("at a sequence cut by a rewind fails (exit 1) with SEQUENCE_NOT_ON_TAPE naming its neighbours", async () => {
    const { root, id } = await seedSession();
    expect((await cli(["rewind", id, "--to", "2", "--root", root])).code).toBe(0); // cuts #3-#5, marker #6
    const run = await cli(["fork", id, "--at", "4", "--root", root]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("(SEQUENCE_NOT_ON_TAPE)");
    expect(run.stderr).toContain("#2 and #6");
  });

  it("is a usage error (exit 2) for an unsafe new id", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["fork", id, "--id", "../escape", "--root", root]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("(INVALID_SESSION_ID)");
  });
});
