// `node --import tsx examples/ai-sdk.ts`: agent-tape under the Vercel AI SDK (`ai` 6), through its adapter
// `agent-tape/ai-sdk`. The SDK runs its own tool loop; the adapter wraps the model (each step lands on the tape as
// it arrives) and the tool map (each file tool snapshots its targets first, fail-closed).
// The model is the SDK's own MockLanguageModelV3 replaying three scripted steps: no network, no key.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { aiSdkTape } from "../src/adapters/ai-sdk/index.js"; // in your project: "agent-tape/ai-sdk"
import { SessionStore, rewind } from "../src/index.js"; // in your project: "agent-tape"
import { eventLine, heading, note, paint, printWorkspace, readWorkspace, sameWorkspace } from "./narrate.js";
import { fileTools } from "./tools.js";

const home = await mkdtemp(join(tmpdir(), "agent-tape-ai-sdk-"));
const workspace = join(home, "workspace");
await mkdir(workspace);
await writeFile(join(workspace, "todo.txt"), "- write the notes\n");

const store = new SessionStore({ root: join(home, "sessions") });
const session = await store.create({ title: "ai-sdk", workspace });

// The tools as the SDK wants them: tool({ description, inputSchema, execute }).
const files = fileTools(workspace);
const sdkTools = {
  read_file: tool({
    description: files.read_file!.description,
    inputSchema: z.object({ path: z.string() }),
    execute: (input, call) => files.read_file!.execute(input, call),
  }),
  write_file: tool({
    description: files.write_file!.description,
    inputSchema: z.object({ path: z.string(), content: z.string() }),
    execute: (input, call) => files.write_file!.execute(input, call),
  }),
  edit_file: tool({
    description: files.edit_file!.description,
    inputSchema: z.object({ path: z.string(), find: z.string(), replace: z.string() }),
    execute: (input, call) => files.edit_file!.execute(input, call),
  }),
  delete_file: tool({
    description: files.delete_file!.description,
    inputSchema: z.object({ path: z.string() }),
    execute: (input, call) => files.delete_file!.execute(input, call),
  }),
};

// The adapter: SDK tools don't say what they touch, so name the paths per tool.
const tape = aiSdkTape({ store, sessionId: session.id });
const tools = tape.tools(sdkTools, {
  write_file: (input: { path: string }) => [input.path],
  edit_file: (input: { path: string }) => [input.path],
  delete_file: (input: { path: string }) => [input.path],
});

// ---- the SDK's mock model: three steps, as a provider would return them ----------------------
const usage = {
  inputTokens: { total: 100, noCache: 100, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 20, text: 20, reasoning: undefined },
};
const call = (toolCallId: string, toolName: keyof typeof sdkTools, input: object) =>
  ({ type: "tool-call", toolCallId, toolName, input: JSON.stringify(input) }) as const;
const step = (text: string, calls: ReturnType<typeof call>[]) => ({
  content: [{ type: "text" as const, text }, ...calls],
  finishReason: calls.length
    ? { unified: "tool-calls" as const, raw: "tool_calls" }
    : { unified: "stop" as const, raw: "stop" },
  usage,
  warnings: [],
});
const model = new MockLanguageModelV3({
  doGenerate: [
    step("Writing the notes.", [call("t1", "write_file", { path: "notes.md", content: "# Notes\n\n- first draft\n" })]),
    step("Polishing them; the todo is done.", [
      call("t2", "edit_file", { path: "notes.md", find: "first draft", replace: "final version" }),
      call("t3", "delete_file", { path: "todo.txt" }),
    ]),
    step("Done: notes.md is final and todo.txt is gone.", []),
  ],
});

const prompt = "Write notes.md, finish it, and clear the todo.";
await tape.user(prompt);
const workspaceAfterStep: Awaited<ReturnType<typeof readWorkspace>>[] = [];
const result = await generateText({
  model: tape.model(model),
  tools,
  prompt,
  stopWhen: stepCountIs(5),
  // Only to show below that the rewind gives back the files of step 1: the adapter needs no callback.
  onStepFinish: async () => {
    workspaceAfterStep.push(await readWorkspace(workspace));
  },
});

console.log(
  paint("bold", "agent-tape under the Vercel AI SDK: generateText through agent-tape/ai-sdk, on MockLanguageModelV3"),
);
heading(`generateText ran ${result.steps.length} steps; the tape`);
note("Each step lands as it arrives: the assistant's text and calls before the SDK runs a tool,");
note("then each call's checkpoint and result.");
for await (const event of store.read(session.id)) console.log(eventLine(event));
printWorkspace("files now:", await readWorkspace(workspace));

heading("Rewind to before call t2, the first call of step 2 (the SDK's call id)");
const report = await rewind(store, session.id, { beforeCallId: "t2" });
for (const change of report.changes)
  console.log(`    ${paint(change.action === "delete" ? "red" : "green", change.action.padEnd(8))}${change.path}`);
console.log(
  `    ${report.filesRestored} restored, ${report.filesDeleted} deleted, ${report.eventsRemoved} events removed, ` +
    `marker #${report.markerSequence}`,
);
const afterRewind = await readWorkspace(workspace);
printWorkspace("files after the rewind:", afterRewind);
const same = sameWorkspace(afterRewind, workspaceAfterStep[0]!);
console.log(
  `  ${same ? paint("green", "✓") : paint("red", "✗ NOT TRUE:")} ` +
    "the workspace is exactly what it was at the end of step 1",
);
if (!same) process.exitCode = 1;

heading("Resume: the tape as the SDK's model messages");
note("generateText({ model: tape.model(model), tools, messages: await tape.messages() }) goes on from here.");
for (const message of await tape.messages()) {
  const parts = typeof message.content === "string" ? [message.content] : message.content;
  const text = parts.map((part) =>
    typeof part === "string"
      ? part
      : part.type === "text"
        ? part.text
        : part.type === "tool-call"
          ? `call ${part.toolCallId} ${part.toolName}`
          : part.type === "tool-result"
            ? `result ${part.toolCallId}`
            : part.type,
  );
  console.log(`    ${message.role.padEnd(10)}${text.join(" · ")}`);
}

await store.close();
await rm(home, { recursive: true });
