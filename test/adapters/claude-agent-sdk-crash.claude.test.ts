// agent-tape/claude-agent-sdk across kill -9, with the real Claude Agent SDK and the
// Claude Code binary its package brings (the "claude" vitest project: defined only where .ci/run installed the SDK
// into .tools/claude-agent-sdk, since its binary is 400 MB and no devDependency). Claude Code talks to a scripted
// Messages API on 127.0.0.1 (test/adapters/claude-messages-api.ts), in a child isolated from the network; its own
// Write, Edit and Bash tools change real files. The tape is its `sessionStore`, `checkpointHooks()` its hooks.
// The child is killed with SIGKILL (with Claude Code and the command under it) while its 4th call, a shell
// command, runs. Then: the transcript is on the tape; a new child resumes the Claude session from it (a fresh
// CLAUDE_CONFIG_DIR, so only the tape has it) and runs one more command; a rewind to before the 2nd call restores
// the files byte for byte and cuts the transcript; undo puts back the runs' tree. One round.
import { randomUUID } from "node:crypto";
import { mkdir, readFile, realpath, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { claudeEvents } from "../../src/adapters/claude-agent-sdk/index.js";
import { rewind, undoRewind } from "../../src/index.js";
import { Child, childrenKilledAfterEach, runChild } from "../helpers/children.js";
import { textFilesOf, treeOf } from "../helpers/workspace-tree.js";
import { CLAUDE_SDK_ENTRY } from "./claude-sdk-entry.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});
const children = childrenKilledAfterEach();

async function until(done: () => Promise<boolean>, what: string, child: Child): Promise<void> {
  for (let tries = 0; tries < 2400; tries++) {
    if (await done()) return;
    if (child.process.exitCode !== null || child.process.signalCode !== null)
      throw new Error(`the child ended before ${what}:\n${child.stdout}\n${child.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no ${what} in 120 s:\n${child.stdout}\n${child.stderr}`);
}

/** The tool_use and tool_result ids of a transcript, in order, as `use:id` and `result:id`. */
function calls(entries: readonly Record<string, unknown>[] | null): string[] {
  return (entries ?? []).flatMap((entry) => {
    const content = (entry.message as { content?: unknown } | undefined)?.content;
    return (Array.isArray(content) ? content : []).flatMap(
      (block: { type?: string; id?: string; tool_use_id?: string }) =>
        block.type === "tool_use"
          ? [`use:${block.id}`]
          : block.type === "tool_result"
            ? [`result:${block.tool_use_id}`]
            : [],
    );
  });
}

describe("agent-tape/claude-agent-sdk, Claude Code killed mid-tool", () => {
  it("the transcript resumes from the tape; rewind before the 2nd call restores files; undo", async () => {
    const base = await realpath(await tempDir("agent-tape-claude-crash-"));
    const root = join(base, "sessions");
    const workspace = join(base, "ws");
    const marker = join(base, "in-tool");
    await mkdir(workspace);
    await writeFile(join(workspace, "todo.txt"), "- write the notes\n");
    const claudeSession = randomUUID();
    const args = (mode: string) => [CLAUDE_SDK_ENTRY, root, workspace, claudeSession, mode, "t4", marker];

    const child = new Child("claude-agent-run.ts", args("start"), {}, { isolated: true });
    children.push(child);
    await until(
      () =>
        stat(marker).then(
          () => true,
          () => false,
        ),
      "sign that the 4th call runs",
      child,
    );
    const atKill = await textFilesOf(workspace);
    child.kill("SIGKILL");
    const ended = await child.done();
    expect(ended.signal).toBe("SIGKILL");
    expect(ended.stdout).not.toContain("finished");
    expect(atKill["notes.md"], `${JSON.stringify(atKill)}\n${child.stdout}\n${child.stderr}`).toBe("# Final notes\n");
    expect(atKill["todo.txt"]).toBeUndefined();

    // The transcript is on the tape up to the killed call; each call went call > checkpoint > result on it.
    const lister = openStore({ root });
    const tapes = await lister.list();
    await lister.close();
    expect(tapes).toHaveLength(1);
    const tapeId = tapes[0]!.id;
    expect(tapeId.endsWith(claudeSession)).toBe(true);
    const store = openStore({ root, events: claudeEvents });
    const loadTape = async () => {
      const found = (await store.readAll(tapeId, { types: ["claude_entry"] })).map((e) => e.payload.entry);
      return found as Record<string, unknown>[];
    };
    expect(calls(await loadTape())).toEqual([
      "use:t1",
      "result:t1",
      "use:t2",
      "use:t3",
      ...(calls(await loadTape())[4] === "result:t2" ? ["result:t2", "result:t3"] : ["result:t3", "result:t2"]),
      "use:t4",
    ]);
    const lines = (await store.readAll(tapeId, { types: ["tool_call", "session_checkpoint", "tool_result"] })).map(
      (e) => `${e.type}:${(e.payload as { callId?: string }).callId}`,
    );
    for (const id of ["t1", "t2"])
      expect(lines.filter((l) => l.endsWith(`:${id}`))).toEqual([
        `tool_call:${id}`,
        `session_checkpoint:${id}`,
        `tool_result:${id}`,
      ]);
    expect(lines.filter((l) => l.endsWith(":t4"))).toEqual(["tool_call:t4"]); // killed before its command ended

    // A new process resumes the Claude session from the tape alone and goes on.
    const resumed = await runChild("claude-agent-run.ts", args("resume"), {}, { isolated: true });
    expect(resumed.stdout, resumed.stderr).toContain("result success Done.");
    // The model was sent the tape's history: every call answered, the killed one too (by Claude Code, on resume).
    expect(resumed.stdout).toMatch(/^history t1,(t2,t3|t3,t2),t4$/m);
    expect(await readFile(join(workspace, "notes.md"), "utf8")).toBe("# Final notes\nstamped\n");
    const afterResume = calls(await loadTape());
    expect(afterResume.slice(-2)).toEqual(["use:t5", "result:t5"]);
    const beforeRewind = await treeOf(workspace);

    // Back to before the 2nd call, by Claude's tool_use id: the files as the 1st call left them, the shell's work
    // undone, and the transcript cut before the call.
    await rewind(store, tapeId, { beforeCallId: "t2" });
    expect(await textFilesOf(workspace)).toEqual({ "notes.md": "# Notes\n", "todo.txt": "- write the notes\n" });
    expect(Object.keys(await treeOf(workspace))).toEqual(["notes.md", "todo.txt"]);
    // The message that made the call stays (Claude Code writes each tool_use block as an entry of its own: t3's
    // may have reached the tape before t2's checkpoint or after it); no result of the 2nd turn does.
    const rewound = calls(await loadTape());
    expect(rewound.slice(0, 3)).toEqual(["use:t1", "result:t1", "use:t2"]);
    expect(rewound.slice(3)).toEqual(rewound.length > 3 ? ["use:t3"] : []);

    await undoRewind(store, tapeId);
    expect(await treeOf(workspace)).toEqual(beforeRewind);
    expect(calls(await loadTape())).toEqual(afterResume);
  }, 180_000); // two runs of Claude Code, each starting its 400 MB binary
});
