// The generic tool wrapper the framework adapters are built on: checkpoints fail-closed around a tool's execute,
// path tools through `around`, shell tools through `aroundCommand`, and hooks that put call and result on the
// tape around the checkpoint.
import { execFile } from "node:child_process";
import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeEach, describe, expect, it } from "vitest";
import {
  CheckpointStore,
  type SessionStore,
  checkpointTool,
  isAgentTapeError,
  rewind,
  withCheckpoints,
} from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const run = promisify(execFile);
let store: SessionStore;
let checkpoints: CheckpointStore;
let workspace: string;
let sessionId: string;

beforeEach(async () => {
  const base = await realpath(await tempDir("agent-tape-tool-wrapper-"));
  workspace = join(base, "ws");
  await mkdir(workspace);
  await writeFile(join(workspace, "a.txt"), "one\n");
  store = openStore({ root: join(base, "sessions") });
  checkpoints = new CheckpointStore(store);
  sessionId = (await store.create({ workspace })).id;
});

/** What a framework passes after the input (the Vercel AI SDK's shape). */
type Call = { toolCallId?: string; abortSignal?: AbortSignal };

const write = async ({ path, text }: { path: string; text: string }, _call?: Call) => {
  await writeFile(join(workspace, path), text);
  return `wrote ${path}`;
};

describe("withCheckpoints", () => {
  it("snapshots the paths a call names before it runs, with the framework's call id", async () => {
    const tools = withCheckpoints({ write_file: { execute: write } }, checkpoints, sessionId, {
      write_file: (input: { path: string }) => [input.path],
    });
    expect(await tools.write_file.execute({ path: "a.txt", text: "two\n" }, { toolCallId: "c1" })).toBe("wrote a.txt");
    const [checkpoint] = await store.readAll(sessionId, { types: ["session_checkpoint"] });
    expect(checkpoint?.payload).toMatchObject({ tool: "write_file", callId: "c1", files: [{ path: "a.txt" }] });
    await rewind(store, sessionId, { toSequence: 0 });
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("one\n");
  });

  it("fails closed: when the snapshot cannot be taken the tool does not run", async () => {
    let ran = 0;
    const tools = withCheckpoints(
      { write_file: { execute: async (_input: unknown, _call?: Call) => ran++ } },
      checkpoints,
      "no-such-session",
      { write_file: () => ["a.txt"] },
    );
    const error = await tools.write_file.execute({}, { toolCallId: "c1" }).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "SESSION_NOT_FOUND")).toBe(true);
    expect(ran).toBe(0);
  });

  it('a "shell" tool is captured by the workspace index: what the command created is deleted on rewind', async () => {
    const tools = withCheckpoints(
      {
        bash: {
          execute: async ({ command }: { command: string }, _call?: Call) =>
            (await run("sh", ["-c", command], { cwd: workspace })).stdout,
        },
      },
      checkpoints,
      sessionId,
      { bash: "shell" },
    );
    await tools.bash.execute({ command: "mkdir -p gen && echo x > gen/out.txt && rm a.txt" }, { toolCallId: "s1" });
    const [checkpoint] = await store.readAll(sessionId, { types: ["session_checkpoint"] });
    expect(checkpoint?.payload.callId).toBe("s1");
    expect(checkpoint?.payload.files.map((f) => `${f.path}:${f.kind}`).sort()).toEqual([
      "a.txt:blob",
      "gen/out.txt:absent",
      "gen:absent",
    ]);
    await rewind(store, sessionId, { toSequence: 0 });
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("one\n");
    await expect(readFile(join(workspace, "gen/out.txt"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("the hooks put call, checkpoint and result on the tape in that order, a thrown error included", async () => {
    const recorder = {
      beforeCall: async (call: { tool: string; input: unknown; callId?: string }) => {
        await store.append(sessionId, {
          type: "tool_call",
          payload: { callId: call.callId!, name: call.tool, input: call.input },
        });
      },
      afterCall: async (call: { callId?: string }, outcome: { ok: boolean; output?: unknown; error?: unknown }) => {
        await store.append(sessionId, {
          type: "tool_result",
          payload: outcome.ok
            ? { callId: call.callId!, output: outcome.output }
            : { callId: call.callId!, output: String(outcome.error), isError: true },
        });
      },
    };
    const read = {
      execute: async ({ path }: { path: string }, _call?: Call) => readFile(join(workspace, path), "utf8"),
    };
    const failing = {
      execute: async ({ path }: { path: string }, _call?: Call) => {
        await writeFile(join(workspace, path), "half");
        throw new Error("disk full");
      },
    };
    const tools = withCheckpoints(
      { read_file: read, write_file: { execute: write }, failing },
      checkpoints,
      sessionId,
      { write_file: (input: { path: string }) => [input.path], failing: (input: { path: string }) => [input.path] },
      recorder,
    );
    await tools.read_file.execute({ path: "a.txt" }, { toolCallId: "r1" });
    await tools.write_file.execute({ path: "b.txt", text: "new\n" }, { toolCallId: "w1" });
    await expect(tools.failing.execute({ path: "a.txt" }, { toolCallId: "f1" })).rejects.toThrow("disk full");
    const events = await store.readAll(sessionId, { types: ["tool_call", "session_checkpoint", "tool_result"] });
    const tape = events.map((e) => `${e.type}:${e.payload.callId}`);
    expect(tape).toEqual([
      "tool_call:r1",
      "tool_result:r1",
      "tool_call:w1",
      "session_checkpoint:w1",
      "tool_result:w1",
      "tool_call:f1",
      "session_checkpoint:f1",
      "tool_result:f1",
    ]);
    // The half-done write of the failed call is undone by a rewind to before it.
    await rewind(store, sessionId, { toSequence: events[4]!.sequence });
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("one\n");
  });

  it("leaves read-only tools as they are when no hook needs them, and refuses a touches entry naming no tool", () => {
    const read = { execute: async () => "x" };
    const tools = withCheckpoints({ read_file: read, write_file: { execute: write } }, checkpoints, sessionId, {
      write_file: () => ["a.txt"],
    });
    expect(tools.read_file).toBe(read);
    expect(() =>
      withCheckpoints({ write_file: { execute: write } }, checkpoints, sessionId, {
        wirte_file: () => ["a.txt"],
      } as never),
    ).toThrow(/the touches argument names "wirte_file", which is none of the tools it was given \(write_file\)/);
  });
});

describe("checkpointTool", () => {
  it("wraps one execute, taking the call id and signal where the framework keeps them", async () => {
    const stop = new AbortController();
    const execute = checkpointTool(
      checkpoints,
      sessionId,
      "write_file",
      (input: { path: string; text: string }) => [input.path],
      (input: { path: string; text: string }, _context: unknown, details: { callId: string }) =>
        write(input).then((out) => `${out} (${details.callId})`),
      { callIdOf: (_context, details: { callId: string }) => details.callId, signalOf: () => stop.signal },
    );
    expect(await execute({ path: "a.txt", text: "two\n" }, {}, { callId: "x1" })).toBe("wrote a.txt (x1)");
    const [checkpoint] = await store.readAll(sessionId, { types: ["session_checkpoint"] });
    expect(checkpoint?.payload.callId).toBe("x1");
    stop.abort(new Error("user pressed stop"));
    await expect(execute({ path: "a.txt", text: "three\n" }, {}, { callId: "x2" })).rejects.toThrow(
      "user pressed stop",
    );
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("two\n");
  });
});
