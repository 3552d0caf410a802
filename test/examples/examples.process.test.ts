// The examples are what a newcomer runs first: each runs here as a real child process, the way
// `npm run demo` runs it, and what it prints (and leaves on disk) is checked.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { cli } from "../cli/harness.js";
import { docBlocks, examplesCheckedAgainstDocs, exampleShown, expectLinesShown } from "../docs/doc-blocks.js";
import { runChild } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

/** Runs an example with its own TMPDIR (so whatever it leaves behind is ours to inspect and remove). */
async function runExample(file: string): Promise<{ code: number | null; stdout: string; stderr: string; tmp: string }> {
  const tmp = await tempDir("agent-tape-example-");
  const script = fileURLToPath(new URL(`../../examples/${file}`, import.meta.url));
  const { code, stdout, stderr } = await runChild(script, [], { TMPDIR: tmp, NO_COLOR: "1" });
  return { code, stdout, stderr, tmp };
}

/**
 * What the example left in its TMPDIR (tsx keeps its own cache there too: not the example's). The per-user folder of
 * workspace locks (`agent-tape-<uid>`, docs/ARCHITECTURE.md "Workspace lock") stays by design, like /run/user: it is
 * the library's, not the example's, and holds no lock once a rewind is done (checked here).
 */
async function leftBehind(tmp: string): Promise<string[]> {
  const lockFolder = `agent-tape-${process.getuid?.() ?? "user"}`;
  const names = await readdir(tmp);
  if (names.includes(lockFolder)) expect(await readdir(join(tmp, lockFolder, "workspace-locks"))).toEqual([]);
  return names.filter((name) => name.startsWith("agent-tape-") && name !== lockFolder);
}

/** The lines of `output` from the one starting with `from` up to (not including) the next blank or `until` line. */
/** The output blocks of README.md and docs/guide.md that show what `example` prints ("prints, in part"). */
function shownInDocs(example: string): string[] {
  expect(examplesCheckedAgainstDocs).toContain(example);
  const blocks = [...docBlocks("README.md"), ...docBlocks("docs/guide.md")];
  return blocks.filter((block) => exampleShown(block) === example).map((block) => block.text);
}

function section(output: string, from: string, until: RegExp): string[] {
  const lines = output.split("\n");
  const start = lines.findIndex((line) => line.trim().startsWith(from));
  expect(start, `no line starting with "${from}"`).toBeGreaterThanOrEqual(0);
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => line.trim() === "" || until.test(line));
  return end < 0 ? rest : rest.slice(0, end);
}

describe("examples/quickstart.ts", () => {
  it("edits a file under a checkpoint, rewinds it back, and cleans up after itself", async () => {
    const run = await runExample("quickstart.ts");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('after the tool call:   hello.txt = "HELLO, WORLD!\\n"');
    expect(run.stdout).toContain('after rewind to #1:    hello.txt = "Hello, world\\n"');
    expect(run.stdout).toContain("the tape: #1 message, #6 session_rewind");
    // One change, whatever the order of its keys (a report read back from its record has them sorted).
    expect(run.stdout).toMatch(/changes: \[ \{ (?=[^}]*path: 'hello\.txt')(?=[^}]*action: 'restore')[^}]*\} \]/);
    expect(run.stdout).toMatch(/eventsRemoved: 4/);
    expect(await leftBehind(run.tmp)).toEqual([]);
  });
});

describe("examples/agent-loop.ts (npm run demo)", () => {
  it("narrates the loop, rewinds and undoes it, resumes after a restart, and leaves a consistent session", async () => {
    const run = await runExample("agent-loop.ts");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const out = run.stdout;
    expect(out).not.toContain("✗");

    // The tape as it grows: each file-changing call has its before-snapshot and its after-state
    // between call and result.
    expect(out).toMatch(
      new RegExp(
        String.raw`#6 +tool_call +call_2 +edit_file src/greet\.ts\n` +
          String.raw` +#7 +session_checkpoint +before edit_file: src/greet\.ts \(64 B, blob [0-9a-f]{8}\)\n` +
          String.raw` +#8 +session_file_states +after edit_file: src/greet\.ts \(sha256 [0-9a-f]{8}\)\n` +
          " +#9 +tool_result",
      ),
    );
    expect(out).toMatch(/#11 +session_checkpoint +before write_file: CHANGELOG\.md \(absent\)/);
    expect(out.match(/session_file_states +after /g)).toHaveLength(7);
    expect(out.match(/session_checkpoint +before /g)).toHaveLength(7);

    // The rewind to the end of turn one: what it reports and what the files are afterwards.
    const plan = section(out, "rewind(store, id, { toSequence: 14 }) →", /files after/).map((line) =>
      line.trim().replace(/ +/g, " "),
    );
    expect(plan).toEqual([
      "restore notes.txt",
      "restore src/greet.ts",
      "delete test",
      "delete test/greet.test.ts",
      "2 restored, 2 deleted, 19 events removed, 0 blobs pruned, marker #34",
    ]);
    const afterRewind = section(out, "files after the rewind:", /✓|✗/).join("\n");
    expect(afterRewind).toMatch(/notes\.txt +TODO: greet people properly/);
    expect(afterRewind).toMatch(/src\/greet\.ts +export function greet\(name: string\) \{↵ {2}return "Hello, "/);
    expect(afterRewind).not.toContain("test/");
    expect(out).toContain("✓ the workspace is exactly what it was at the end of turn one");

    // undoRewind puts turn two back: notes.txt gone again, the test file and default name back.
    const afterUndo = section(out, "files after the undo:", /✓|✗/).join("\n");
    expect(afterUndo).not.toContain("notes.txt");
    expect(afterUndo).toMatch(/test\/greet\.test\.ts +import \{ greet \}/);
    expect(afterUndo).toContain('export function greet(name = "world")');
    expect(out).toContain("19 events re-appended as #35–#53, marker #54");
    expect(out).toContain("✓ the workspace is exactly what it was before the rewind");

    // The restart: the conversation is rebuilt from the tape alone, then one more turn is taken.
    expect(out).toContain("store.conversation(id) → 7 messages, 7 tool calls (7 with results), through #54");
    expect(out).toMatch(/#55 +message +user: Also export a farewell\(\)\./);
    expect(out).toContain("conversation now: 10 messages, through #61");

    // What it left on disk agrees with what it said.
    const [home] = await leftBehind(run.tmp);
    expect(out).toContain(`rm -rf ${join(run.tmp, home!)}`);
    // The CLI command it prints works as printed (run in-process here; `npx agent-tape` is the package's bin).
    const printed = /^ {4}npx agent-tape (.*)$/m.exec(out)?.[1]?.split(" ");
    expect(printed).toEqual(["--root", join(run.tmp, home!, "sessions"), "list"]);
    const listed = await cli(printed!);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^ID +TITLE +LAST #/);
    const store = openStore({ root: join(run.tmp, home!, "sessions") });
    try {
      const [session] = await store.list();
      expect(out).toContain(`${join(run.tmp, home!, "sessions", session!.id)}/`);
      const events = await store.readAll(session!.id);
      expect(events.map((e) => e.sequence)).toEqual([...range(1, 14), ...range(34, 61)]);
      expect(events.filter((e) => e.type === "session_rewind")).toHaveLength(2);
      expect((await store.conversation(session!.id)).messages).toHaveLength(10);
      expect(out).toMatch(new RegExp(`events\\.jsonl +\\d+ B, ${events.length} lines`));
    } finally {
      await store.close();
    }
    const workspace = join(run.tmp, home!, "workspace");
    expect((await readdir(workspace)).sort()).toEqual(["CHANGELOG.md", "src", "test"]);
    const greet = await readFile(join(workspace, "src/greet.ts"), "utf8");
    expect(greet).toBe(
      'export function greet(name = "world") {\n  return "Hello, " + name;\n}\n\n' +
        'export function farewell(name: string) {\n  return "Bye, " + name;\n}\n',
    );
  });
});

describe("examples/ai-sdk.ts", () => {
  it("checkpoints every file tool the Vercel AI SDK runs, and a rewind undoes the later steps", async () => {
    const run = await runExample("ai-sdk.ts");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const out = run.stdout;
    expect(out).toContain("generateText ran 3 steps");
    expect(out).toMatch(/session_checkpoint +before write_file: notes\.md \(absent\)/);
    expect(out).toMatch(/session_checkpoint +before edit_file: notes\.md \(23 B, blob [0-9a-f]{8}\)/);
    expect(out).toMatch(/session_checkpoint +before delete_file: todo\.txt \(18 B, blob [0-9a-f]{8}\)/);
    expect(out).not.toMatch(/session_checkpoint +before read_file/);
    expect(out).toMatch(/tool_result +t3 +ok: deleted todo\.txt/);

    const afterRewind = section(out, "files after the rewind:", /✓|✗/).join("\n");
    expect(afterRewind).toMatch(/notes\.md +# Notes↵↵- first draft↵/);
    expect(afterRewind).toMatch(/todo\.txt +- write the notes↵/);
    expect(out).toContain("✓ the workspace is exactly what it was at the end of step 1");
    // Rewound by the SDK's call id; what resume hands back to generateText.
    expect(out).toMatch(/Rewind to before call t2/);
    expect(section(out, "generateText({ model: tape.model(model), tools, messages", /$^/).join("\n")).toMatch(
      /user +Write notes\.md.*\n.*assistant +Writing the notes\. · call t1 write_file\n.*tool +result t1\n/,
    );
    // What README.md and docs/guide.md show of its output, line for line.
    const shown = shownInDocs("ai-sdk.ts");
    expect(shown).toHaveLength(2);
    for (const excerpt of shown) expectLinesShown(out, excerpt);
    expect(await leftBehind(run.tmp)).toEqual([]);
  });
});

describe("examples/openai-agents.ts", () => {
  it("runs under the OpenAI Agents SDK and prints what README.md and docs/guide.md show of it", async () => {
    const run = await runExample("openai-agents.ts");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("✓ the workspace is exactly what it was after call t1");
    const shown = shownInDocs("openai-agents.ts");
    expect(shown).toHaveLength(2);
    for (const excerpt of shown) expectLinesShown(run.stdout, excerpt);
    expect(await leftBehind(run.tmp)).toEqual([]);
  }, 120_000); // one tsx child loading the SDK: seconds alone, more on a loaded machine
});

describe("examples/shell-tool.ts", () => {
  it("a wrapped shell tool's create, edit, move and delete are rewound byte for byte, then undone", async () => {
    const run = await runExample("shell-tool.ts");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const out = run.stdout;
    const blob = (path: string, bytes: number) => String.raw`${path} \(${bytes} B, blob [0-9a-f]{8}\)`;
    expect(out).toMatch(
      new RegExp(
        String.raw`#2 +session_checkpoint +before run_shell: docs \(absent\), docs/index\.md \(absent\), ` +
          String.raw`docs/notes\.txt \(absent\), ${blob("notes\\.txt", 10)}, old \(directory\), ` +
          `${blob("old/readme\\.md", 11)}, ${blob("src/app\\.ts", 29)}$`,
        "m",
      ),
    );
    expect(out).not.toContain("node_modules/x/i.js (");
    expect(out).toContain("✓ the tracked files are exactly what they were before the command");
    expect(out).toContain("✓ node_modules/ (ignored) was left as the command made it");
    expect(out).toContain("✓ the workspace is exactly what the command left");
    expect(out).not.toContain("✗");
    expect(await leftBehind(run.tmp)).toEqual([]);
  });
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

describe("examples/readme-own-loop.ts (the README's first quickstart, scripts/check-readme-snippets.mjs)", () => {
  it("runs as the README shows it: the edit is rewound, the rewind undone, and it cleans up after itself", async () => {
    const run = await runExample("readme-own-loop.ts");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('app.ts after the undo: console.log("v2");');
    expect(await leftBehind(run.tmp)).toEqual([]);
  }, 120_000); // one tsx child: seconds alone, more on a loaded machine
});
