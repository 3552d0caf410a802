// What the adapter quickstarts of README.md and docs/guide.md take as given (a store, a workspace, the framework's
// tools and a model), as code to put before a block (test/docs/doc-blocks.ts). The models are scripted: the AI
// SDK's own MockLanguageModelV3, and a `Model` that answers as the Responses API would. No network, no key.

/** A fresh folder under `doc.state.home`, named `name`, with a workspace and a sessions root inside. */
const folders = (name: string) => `
const root = join(doc.state.home, "${name}", "sessions");
const workspace = join(doc.state.home, "${name}", "ws");
await mkdir(workspace, { recursive: true });`;

export const aiSdkImports = `
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";`;

/** `store`, `s`, `myTools` (edit_file, bash), `model` (a call to edit_file, then text), `prompt`, `next`. */
export const aiSdkGiven = (name: string) => `${folders(name)}
const store = new SessionStore({ root });
const s = await store.create({ workspace });
const myTools = {
  edit_file: tool({
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => { await writeFile(join(workspace, path), "edited\\n"); return "edited"; },
  }),
  bash: tool({ inputSchema: z.object({ command: z.string() }), execute: async () => "ran" }),
};
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const text = (text: string) =>
  ({ content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] });
const model = new MockLanguageModelV3({
  doGenerate: [
    {
      content: [{ type: "tool-call", toolCallId: "t1", toolName: "edit_file", input: '{"path":"notes.md"}' }],
      finishReason: { unified: "tool-calls", raw: "tool_calls" },
      usage,
      warnings: [],
    },
    text("Done."),
    text("Done again."),
  ],
});
const prompt = "Write notes.md.";
const next = "Once more.";`;

export const openaiAgentsImports = `
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Agent, Usage, run, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";
import { SessionStore } from "agent-tape";`;

/** `root`, `workspace`, `editFile`, `bash`, `name`, `model` (a call to edit_file, then text), `input`. */
export const openaiAgentsGiven = (name: string) => `${folders(name)}
setTracingDisabled(true);
const editFile = tool({
  name: "edit_file",
  description: "Edit a file.",
  parameters: z.object({ path: z.string() }),
  execute: async ({ path }) => { await writeFile(join(workspace, path), "edited\\n"); return "edited"; },
});
const bash = tool({
  name: "bash",
  description: "Run a command.",
  parameters: z.object({ command: z.string() }),
  execute: async () => "ran",
});
const say = (text: string) =>
  ({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] });
const turns = [
  [{ type: "function_call", callId: "t1", name: "edit_file", arguments: '{"path":"notes.md"}', status: "completed" }],
  [say("Done.")],
];
const model = {
  async getResponse() { return { usage: new Usage(), output: turns.shift() ?? [say("Done again.")] }; },
  async *getStreamedResponse() { throw new Error("not used here"); },
};
const name = "notes";
const input = "Write notes.md.";`;
