// agent-tape/ai-sdk against the real `ai` 6 package: generateText and streamText with the SDK's mock model and
// real file and shell tools. The tape must read message, tool call, checkpoint, result as they happened, and
// resume must hand the SDK a conversation it continues from.
import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generateText, stepCountIs, streamText } from "ai";
import { beforeEach, describe, expect, it } from "vitest";
import { aiSdkTape } from "../../src/adapters/ai-sdk/index.js";
import { type SessionStore, isAgentTapeError, rewind } from "../../src/index.js";
import { STEPS, TOUCHES, agentTools, scriptedModel } from "./ai-sdk-agent.js";
import { openStore, tempDir } from "../helpers/fixture.js";

let root: string;
let workspace: string;
let store: SessionStore;
let sessionId: string;

beforeEach(async () => {
  const base = await realpath(await tempDir("agent-tape-ai-sdk-"));
  root = join(base, "sessions");
  workspace = join(base, "ws");
  await mkdir(workspace);
  await writeFile(join(workspace, "todo.txt"), "- write the notes\n");
  store = openStore({ root });
  sessionId = (await store.create({ workspace })).id;
});

/** The tape as `type:detail`, for the event types the adapter writes. */
async function tape(): Promise<string[]> {
  const events = await store.readAll(sessionId, {
    types: ["message", "tool_call", "session_checkpoint", "tool_result"],
  });
  return events.map((e) =>
    e.type === "message" ? `message:${e.payload.role}` : `${e.type}:${e.payload.callId ?? ""}`,
  );
}

const EXPECTED_TAPE = [
  "message:user",
  "message:assistant",
  "tool_call:t1",
  "session_checkpoint:t1",
  "tool_result:t1",
  "message:assistant",
  "tool_call:t2",
  "tool_call:t3",
  // The SDK runs a step's tools concurrently: each call's checkpoint comes before its result.
  ...["session_checkpoint:t2", "tool_result:t2", "session_checkpoint:t3", "tool_result:t3"],
  "message:assistant",
  "tool_call:t4",
  "session_checkpoint:t4",
  "tool_result:t4",
  "message:assistant",
];

/** Checkpoint-before-result per call, whatever the interleaving of a step's concurrent tools. */
function causal(lines: string[]): string[] {
  const order = (id: string) => lines.filter((l) => l.endsWith(`:${id}`)).map((l) => l.split(":")[0]);
  return ["t1", "t2", "t3", "t4"].map((id) => `${id}: ${order(id).join(" > ")}`);
}

describe("agent-tape/ai-sdk", () => {
  for (const mode of ["generateText", "streamText"] as const) {
    it(`${mode}: steps land as they happen, call > checkpoint > result; a rewind undoes the shell too`, async () => {
      const t = aiSdkTape({ store, sessionId });
      await t.user("Write the notes.");
      const args = {
        model: t.model(scriptedModel(STEPS)),
        tools: t.tools(agentTools(workspace), TOUCHES),
        prompt: "Write the notes.",
        stopWhen: stepCountIs(10),
      };
      if (mode === "generateText") await generateText(args);
      else {
        const result = streamText({ ...args, onError: ({ error }) => console.error(error) });
        await result.consumeStream();
        await result.steps;
      }
      const lines = await tape();
      expect(lines.filter((l) => l.startsWith("message")).length).toBe(5);
      expect(causal(lines)).toEqual([1, 2, 3, 4].map((n) => `t${n}: tool_call > session_checkpoint > tool_result`));
      if (mode === "generateText") {
        // Exact but for the 2nd step's two concurrent tools, whose checkpoints and results interleave freely.
        expect(lines.slice(0, 8)).toEqual(EXPECTED_TAPE.slice(0, 8));
        expect(lines.slice(8, 12).sort()).toEqual(EXPECTED_TAPE.slice(8, 12).sort());
        expect(lines.slice(12)).toEqual(EXPECTED_TAPE.slice(12));
      }
      expect(await readFile(join(workspace, "notes.md"), "utf8")).toBe("# Final notes\nstamped\n");

      // Back to before the 2nd tool call: notes.md as the first call wrote it, the shell's work undone.
      const events = await store.readAll(sessionId, { types: ["tool_call"] });
      await rewind(store, sessionId, { toSequence: events[1]!.sequence - 1 });
      expect(await readFile(join(workspace, "notes.md"), "utf8")).toBe("# Notes\n");
      expect(await readFile(join(workspace, "todo.txt"), "utf8")).toBe("- write the notes\n");
      await expect(readFile(join(workspace, "gen/index.txt"))).rejects.toMatchObject({ code: "ENOENT" });
    });
  }

  it("resumes: the tape becomes model messages the SDK continues from; an unfinished call is answered", async () => {
    const first = aiSdkTape({ store, sessionId });
    await first.user("Write the notes.");
    // The first run stops after two steps, as if the process ended there.
    await generateText({
      model: first.model(scriptedModel(STEPS.slice(0, 2))),
      tools: first.tools(agentTools(workspace), TOUCHES),
      prompt: "Write the notes.",
      stopWhen: stepCountIs(2),
    });
    // And a call whose result never made it to the tape (killed mid-tool).
    await store.append(sessionId, { type: "message", payload: { role: "assistant", content: "One more." } });
    await store.append(sessionId, { type: "tool_call", payload: { callId: "lost", name: "bash", input: {} } });

    const reopened = openStore({ root });
    try {
      const again = aiSdkTape({ store: reopened, sessionId });
      const messages = await again.messages();
      expect(messages.map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
      ]);
      expect(messages[4]).toMatchObject({
        role: "tool",
        content: [
          { toolCallId: "t2", output: { type: "text", value: "edited notes.md" } },
          { toolCallId: "t3", output: { type: "text" } },
        ],
      });
      expect(messages[6]).toMatchObject({ content: [{ toolCallId: "lost", output: { type: "error-text" } }] });
      const model = scriptedModel(STEPS.slice(2));
      const result = await generateText({
        model: again.model(model),
        tools: again.tools(agentTools(workspace), TOUCHES),
        messages,
        stopWhen: stepCountIs(10),
      });
      expect(result.text).toBe("Done.");
      // The model was sent the whole conversation from the tape.
      expect(model.doGenerateCalls[0]!.prompt.map((m) => m.role)).toEqual(messages.map((m) => m.role));
      expect(await readFile(join(workspace, "notes.md"), "utf8")).toBe("# Final notes\nstamped\n");
    } finally {
      await reopened.close();
    }
  });

  it("refuses a tool call naming a path outside the workspace: the model reads why, nothing is written", async () => {
    const t = aiSdkTape({ store, sessionId });
    await t.user("Write outside.");
    const script = [
      {
        text: "Writing.",
        calls: [{ id: "o1", tool: "write_file" as const, input: { path: "../escape.txt", text: "x" } }],
      },
      { text: "Could not.", calls: [] },
    ];
    const result = await generateText({
      model: t.model(scriptedModel(script)),
      tools: t.tools(agentTools(workspace), TOUCHES),
      prompt: "Write outside.",
      stopWhen: stepCountIs(5),
    });
    const toolError = result.steps[0]!.content.find((part) => part.type === "tool-error");
    expect(String((toolError as { error?: unknown } | undefined)?.error)).toMatch(
      /"\.\.\/escape\.txt" leads outside the workspace/,
    );
    const [toolResult] = await store.readAll(sessionId, { types: ["tool_result"] });
    expect(toolResult?.payload).toMatchObject({ callId: "o1", isError: true });
    expect(String(toolResult?.payload.output)).toContain('"../escape.txt" leads outside the workspace');
    await expect(readFile(join(workspace, "../escape.txt"))).rejects.toMatchObject({ code: "ENOENT" });
    expect(await store.readAll(sessionId, { types: ["session_checkpoint"] })).toEqual([]);

    // With outsidePaths: "allow" the same call runs, as before (recorded skipped).
    const allowing = aiSdkTape({ store, sessionId, outsidePaths: "allow" });
    await generateText({
      model: allowing.model(scriptedModel(script)),
      tools: allowing.tools(agentTools(workspace), TOUCHES),
      prompt: "Write outside.",
      stopWhen: stepCountIs(5),
    });
    expect(await readFile(join(workspace, "../escape.txt"), "utf8")).toBe("x");
  });

  it("fails closed: when the tape cannot be written, the model call fails and no tool runs", async () => {
    const t = aiSdkTape({ store, sessionId: "gone" });
    let ran = 0;
    const error = await generateText({
      model: t.model(scriptedModel(STEPS)),
      tools: t.tools(
        agentTools(workspace, () => {
          ran++;
        }),
        TOUCHES,
      ),
      prompt: "Write the notes.",
      stopWhen: stepCountIs(10),
    }).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "SESSION_NOT_FOUND")).toBe(true);
    expect(ran).toBe(0);
    await expect(readFile(join(workspace, "notes.md"))).rejects.toMatchObject({ code: "ENOENT" });
  });
});
