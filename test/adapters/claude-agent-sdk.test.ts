// agent-tape/claude-agent-sdk: the SDK's SessionStore contract on the tape, and the checkpoint hooks' answers when
// they cannot checkpoint. The full loop with the real SDK and Claude Code is claude-agent-sdk-crash.claude.test.ts.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { claudeEvents, claudeSessionStore } from "../../src/adapters/claude-agent-sdk/index.js";
import { rewind } from "../../src/index.js";
import { openStore, rootOrStore, tempDir } from "../helpers/fixture.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function open(root?: string) {
  const at = root ?? join(await tempDir("agent-tape-claude-"), "sessions");
  const store = claudeSessionStore(rootOrStore(at, claudeEvents));
  closers.push(() => store.close());
  return { store, root: at };
}

const key = { projectKey: "-home-me-project", sessionId: "3f1c2a9e-5b7d-4e21-9a0b-7c6d5e4f3a21" };
const entry = (uuid: string | undefined, text: string) => ({
  type: "user",
  ...(uuid !== undefined && { uuid }),
  timestamp: "2026-12-01T00:00:00.000Z",
  message: { role: "user", content: [{ type: "text", text }] },
});

describe("agent-tape/claude-agent-sdk", () => {
  it("load returns what append was given, in order, each transcript (main, subagent) on its own", async () => {
    const { store } = await open();
    expect(await store.load(key)).toBeNull();
    await store.append(key, [entry("u1", "one"), entry("u2", "two")]);
    await store.append({ ...key, subpath: "subagents/agent-a" }, [entry("s1", "sub")]);
    await store.append(key, [{ type: "custom-title", title: "fix the build" }]);
    expect(await store.load(key)).toEqual([
      entry("u1", "one"),
      entry("u2", "two"),
      { type: "custom-title", title: "fix the build" },
    ]);
    expect(await store.load({ ...key, subpath: "subagents/agent-a" })).toEqual([entry("s1", "sub")]);
    expect(await store.load({ ...key, subpath: "subagents/none" })).toBeNull();
    expect(await store.listSubkeys(key)).toEqual(["subagents/agent-a"]);
  });

  it("treats uuid as an idempotency key: a retried batch, or another process's copy, is written once", async () => {
    const { store, root } = await open();
    await store.append(key, [entry("u1", "one"), entry(undefined, "no uuid")]);
    // The SDK retries a batch whose append timed out after it landed.
    await store.append(key, [entry("u1", "one"), entry("u2", "two")]);
    // A second store on the same root (another process) replays the session (importSessionToStore).
    const { store: other } = await open(root);
    await other.append(key, [entry("u1", "one"), entry("u2", "two"), entry("u3", "three")]);
    await store.append(key, [entry("u3", "three")]);
    expect((await store.load(key))?.map((e) => e.uuid ?? "-")).toEqual(["u1", "-", "u2", "u3"]);
  });

  it("a batch whose append failed is written whole when the SDK retries it", async () => {
    const { store } = await open();
    await store.append(key, [entry("u0", "zero")]);
    // An entry the tape refuses fails the whole batch: none of it is on the tape.
    await expect(store.append(key, [entry("u1", "one"), { uuid: "u2" } as never])).rejects.toThrow();
    await store.append(key, [entry("u1", "one"), entry("u2", "two")]);
    expect((await store.load(key))?.map((e) => e.uuid)).toEqual(["u0", "u1", "u2"]);
  });

  it("lists a project's sessions with integer mtimes, deletes a subagent's transcript or all", async () => {
    const { store } = await open();
    await store.append(key, [entry("u1", "one")]);
    await store.append({ ...key, sessionId: "other-session" }, [entry("u9", "x")]);
    await store.append({ projectKey: "-elsewhere", sessionId: "not-listed" }, [entry("u8", "y")]);
    const listed = await store.listSessions(key.projectKey);
    expect(listed.map((s) => s.sessionId).sort()).toEqual([key.sessionId, "other-session"].sort());
    for (const s of listed) expect(Number.isInteger(s.mtime) && s.mtime > 0).toBe(true);

    await store.append({ ...key, subpath: "subagents/a" }, [entry("s1", "sub")]);
    await store.delete({ ...key, subpath: "subagents/a" });
    expect(await store.load({ ...key, subpath: "subagents/a" })).toBeNull();
    expect(await store.listSubkeys(key)).toEqual([]);
    expect(await store.load(key)).toHaveLength(1);
    await store.delete(key);
    expect(await store.load(key)).toBeNull();
    expect((await store.listSessions(key.projectKey)).map((s) => s.sessionId)).toEqual(["other-session"]);
  });

  it("the transcript is an agent-tape session: a rewind takes the conversation back", async () => {
    const { store, root } = await open();
    await store.append(key, [entry("u1", "one")]);
    await store.append(key, [entry("u2", "two"), entry("u3", "three")]);
    const tape = openStore({ root, events: claudeEvents });
    try {
      await rewind(tape, store.tapeSessionId(key), { toSequence: 1, mode: "conversation" });
    } finally {
      await tape.close();
    }
    expect((await store.load(key))?.map((e) => e.uuid)).toEqual(["u1"]);
    // After the rewind the cut entries can be written again (the SDK resumes from the shorter transcript).
    await store.append(key, [entry("u2", "two again")]);
    expect((await store.load(key))?.map((e) => e.uuid)).toEqual(["u1", "u2"]);
    // The full re-read after a rewind passes over the marker and still knows every uuid on the tape.
    await store.append(key, [entry("u1", "one"), entry("u2", "two again"), entry("u4", "four")]);
    expect((await store.load(key))?.map((e) => e.uuid)).toEqual(["u1", "u2", "u4"]);
  });

  describe("checkpointHooks", () => {
    const signal = new AbortController().signal;
    const pre = (sessionId: string, toolUseId: string, toolInput: unknown, tool = "Write") => ({
      hook_event_name: "PreToolUse",
      session_id: sessionId,
      tool_name: tool,
      tool_input: toolInput,
      tool_use_id: toolUseId,
    });
    const denied = (output: Record<string, unknown>) =>
      (output.hookSpecificOutput as { permissionDecision?: string } | undefined)?.permissionDecision;
    const reason = (output: Record<string, unknown>) =>
      (output.hookSpecificOutput as { permissionDecisionReason?: string } | undefined)?.permissionDecisionReason;

    it("deny the call (fail-closed) when no transcript of the session is in the store", async () => {
      const { store } = await open();
      const hooks = store.checkpointHooks({ entryWaitMs: 10 });
      const output = await hooks.PreToolUse[0]!.hooks[0]!(
        pre("never-seen", "toolu_1", { file_path: "/x" }),
        "toolu_1",
        {
          signal,
        },
      );
      expect(denied(output)).toBe("deny");
      expect(reason(output)).toMatch(/No transcript of Claude session "never-seen"/);
    });

    it("deny a file call on a tape with no workspace; else call > checkpoint > result", async () => {
      const base = await tempDir("agent-tape-claude-hooks-");
      const workspace = join(base, "ws");
      await mkdir(workspace);
      const noWorkspace = claudeSessionStore(rootOrStore(join(base, "a"), claudeEvents));
      const withWorkspace = claudeSessionStore({ ...rootOrStore(join(base, "b"), claudeEvents), workspace });
      closers.push(
        () => noWorkspace.close(),
        () => withWorkspace.close(),
      );
      const assistant = { type: "assistant", uuid: "a1", message: { content: [{ type: "tool_use", id: "toolu_1" }] } };
      for (const s of [noWorkspace, withWorkspace]) await s.append(key, [entry("u1", "go"), assistant]);
      const input = pre(key.sessionId, "toolu_1", { file_path: join(workspace, "notes.md"), content: "x" });

      const refused = await noWorkspace.checkpointHooks().PreToolUse[0]!.hooks[0]!(input, "toolu_1", { signal });
      expect(denied(refused)).toBe("deny");
      expect(reason(refused)).toMatch(/has no workspace/);

      const hooks = withWorkspace.checkpointHooks();
      expect(await hooks.PreToolUse[0]!.hooks[0]!(input, "toolu_1", { signal })).toEqual({});
      await writeFile(join(workspace, "notes.md"), "x");
      await hooks.PostToolUse[0]!.hooks[0]!({ ...input, tool_response: { type: "create" } }, "toolu_1", { signal });
      const tape = openStore({ root: join(base, "b"), events: claudeEvents });
      const types = (await tape.readAll(withWorkspace.tapeSessionId(key))).map((e) => e.type);
      expect(types).toEqual([
        "claude_entry",
        "claude_entry",
        "tool_call",
        "session_checkpoint",
        "session_file_states",
        "tool_result",
      ]);
    });
  });
});
