// `node --import tsx examples/openai-agents.ts` (Node 22 or later, as `@openai/agents` needs): agent-tape under
// the OpenAI Agents SDK, through `agent-tape/openai-agents`. The tape is the run's `Session`; the wrapped model
// writes each turn's items as they happen, and the wrapped tools snapshot their targets first.
// The model is a scripted `Model` replaying three turns as the Responses API would: no network, no key.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, type AgentOutputItem, type Model, Usage, run, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";
// in your project: "agent-tape/openai-agents"
import { openaiAgentsEvents, openaiAgentsTape } from "../src/adapters/openai-agents/index.js";
import { SessionStore, rewind } from "../src/index.js"; // in your project: "agent-tape"
import { eventLine, heading, note, paint, printWorkspace, readWorkspace, sameWorkspace } from "./narrate.js";

setTracingDisabled(true);
const home = await mkdtemp(join(tmpdir(), "agent-tape-openai-agents-"));
const workspace = join(home, "workspace");
await mkdir(workspace);
await writeFile(join(workspace, "todo.txt"), "- write the notes\n");

// ---- the SDK's tools, and a scripted model ---------------------------------------------------
const tools = [
  tool({
    name: "write_file",
    description: "Write a file.",
    parameters: z.object({ path: z.string(), content: z.string() }),
    execute: async ({ path, content }) => {
      await writeFile(join(workspace, path), content);
      return `wrote ${content.length} bytes to ${path}`;
    },
  }),
  tool({
    name: "edit_file",
    description: "Replace text in a file.",
    parameters: z.object({ path: z.string(), find: z.string(), replace: z.string() }),
    execute: async ({ path, find, replace }) => {
      const before = await readFile(join(workspace, path), "utf8");
      await writeFile(join(workspace, path), before.replace(find, replace));
      return `edited ${path}`;
    },
  }),
  tool({
    name: "delete_file",
    description: "Delete a file.",
    parameters: z.object({ path: z.string() }),
    execute: async ({ path }) => {
      await rm(join(workspace, path));
      return `deleted ${path}`;
    },
  }),
];
const say = (text: string): AgentOutputItem => ({
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text }],
});
const call = (callId: string, name: string, input: object): AgentOutputItem => ({
  type: "function_call",
  callId,
  name,
  arguments: JSON.stringify(input),
  status: "completed",
});
const turns: AgentOutputItem[][] = [
  [say("Writing the notes."), call("t1", "write_file", { path: "notes.md", content: "# Notes\n\n- first draft\n" })],
  [
    say("Polishing them; the todo is done."),
    call("t2", "edit_file", { path: "notes.md", find: "first draft", replace: "final version" }),
    call("t3", "delete_file", { path: "todo.txt" }),
  ],
  [say("Done: notes.md is final and todo.txt is gone.")],
];
const model: Model = {
  async getResponse() {
    return { usage: new Usage(), output: turns.shift() ?? [say("(no more turns)")] };
  },
  // biome-ignore lint/correctness/useYield: this example runs without streaming
  async *getStreamedResponse() {
    throw new Error("not used here");
  },
};

// ---- the adapter: the five lines --------------------------------------------------------------
const store = new SessionStore({ root: join(home, "sessions"), events: openaiAgentsEvents });
const { id } = await store.create({ title: "openai-agents", workspace });
const tape = openaiAgentsTape({ store, sessionId: id });
const touches = { write_file: (i: { path: string }) => [i.path], edit_file: (i: { path: string }) => [i.path] };
const agent = new Agent({
  name: "notes",
  model: tape.model(model),
  tools: tape.tools(tools, { ...touches, delete_file: (i: { path: string }) => [i.path] }),
});
const afterStep1: Awaited<ReturnType<typeof readWorkspace>>[] = [];
agent.on("agent_tool_end", async (_context, used) => {
  if (used.name === "write_file") afterStep1.push(await readWorkspace(workspace));
});
const result = await run(agent, "Write notes.md, finish it, and clear the todo.", { session: tape.session });

console.log(paint("bold", "agent-tape under the OpenAI Agents SDK: run() with the tape as its Session"));
heading(`run() answered "${result.finalOutput}"; the tape`);
note("Each turn lands as it happens: the model's items before the runner runs a tool, then each");
note("call's checkpoint and result (the runner itself hands the session its items only at the run's end).");
for await (const event of store.read(id)) console.log(eventLine(event));
printWorkspace("files now:", await readWorkspace(workspace));

heading("Rewind to before call t2, the first call of turn 2 (the SDK's call id)");
const report = await rewind(store, id, { beforeCallId: "t2" });
for (const change of report.changes)
  console.log(`    ${paint(change.action === "delete" ? "red" : "green", change.action.padEnd(8))}${change.path}`);
const afterRewind = await readWorkspace(workspace);
printWorkspace("files after the rewind:", afterRewind);
const same = sameWorkspace(afterRewind, afterStep1[0]!);
console.log(
  `  ${same ? paint("green", "✓") : paint("red", "✗ NOT TRUE:")} the workspace is exactly what it was after call t1`,
);
if (!same) process.exitCode = 1;

heading("Resume: session.getItems(), what the next run(agent, input, { session }) starts from");
for (const item of await tape.session.getItems()) {
  const it = item as { type?: string; role?: string; callId?: string; content?: unknown };
  const parts = Array.isArray(it.content) ? (it.content as { text?: string }[]) : [{ text: String(it.content) }];
  const text = parts.map((part) => part.text ?? "").join("");
  console.log(`    ${(it.type ?? "message").padEnd(22)}${it.callId ?? `${it.role}: ${text}`}`);
}

await store.close();
await rm(home, { recursive: true });
