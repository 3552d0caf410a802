// `node --import tsx examples/ai-sdk.ts`: agent-tape under the Vercel AI SDK (`ai` 6). The SDK runs its own tool
// loop; withCheckpoints wraps its tool map so every file tool snapshots its targets first.
// The model is the SDK's own MockLanguageModelV3 replaying three scripted steps: no network, no key.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateText, stepCountIs, tool, type StepResult } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { CheckpointStore, SessionStore, rewind } from "../src/index.js"; // in your project: "agent-tape"
import type { BuiltinEvents, EventInput } from "../src/index.js";
import { eventLine, heading, note, paint, printWorkspace, readWorkspace, sameWorkspace } from "./narrate.js";
import { fileTools } from "./tools.js";
import { withCheckpoints } from "../src/index.js"; // in your project: from "agent-tape"

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

// The one line that matters: SDK tools don't say what they touch, so name the paths per tool.
const tools = withCheckpoints(sdkTools, new CheckpointStore(store), session.id, {
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

// ---- recording each step on the tape ---------------------------------------------------------
// The SDK runs a step's tools, then calls onStepFinish: so a step's checkpoints come just before
// its events on the tape, and rewinding to the end of a step undoes exactly the steps after it.
function stepEvents(
  result: Pick<StepResult<typeof tools>, "text" | "toolCalls" | "content">,
): EventInput<BuiltinEvents>[] {
  return [
    { type: "message", payload: { role: "assistant", content: result.text } },
    ...result.toolCalls.map((c) => ({
      type: "tool_call" as const,
      payload: { callId: c.toolCallId, name: c.toolName, input: c.input },
    })),
    ...result.content.flatMap((part) =>
      part.type === "tool-result"
        ? [{ type: "tool_result" as const, payload: { callId: part.toolCallId, output: part.output } }]
        : part.type === "tool-error"
          ? [
              {
                type: "tool_result" as const,
                payload: { callId: part.toolCallId, output: String(part.error), isError: true },
              },
            ]
          : [],
    ),
  ];
}

const prompt = "Write notes.md, finish it, and clear the todo.";
await store.append(session.id, { type: "message", payload: { role: "user", content: prompt } });
const stepEnds: number[] = [];
const workspaceAfterStep: Awaited<ReturnType<typeof readWorkspace>>[] = [];
// The SDK ignores errors thrown by onStepFinish, so a failed append is kept and stops the run.
const stop = new AbortController();
let tapeError: unknown;

const result = await generateText({
  model,
  tools,
  prompt,
  stopWhen: stepCountIs(5),
  abortSignal: stop.signal,
  onStepFinish: async (stepResult) => {
    try {
      const written = await store.appendMany(session.id, stepEvents(stepResult));
      stepEnds.push(written[written.length - 1]!.sequence);
      workspaceAfterStep.push(await readWorkspace(workspace));
    } catch (error) {
      tapeError ??= error;
      stop.abort(error);
    }
  },
});
if (tapeError) throw tapeError;

console.log(
  paint(
    "bold",
    "agent-tape under the Vercel AI SDK: generateText with a checkpointed tool map, on MockLanguageModelV3",
  ),
);
heading(`generateText ran ${result.steps.length} steps; the tape`);
note("The SDK runs a step's tools before onStepFinish records the step, so each step's checkpoints");
note("come just before its events.");
for await (const event of store.read(session.id)) console.log(eventLine(event));
printWorkspace("files now:", await readWorkspace(workspace));

heading(`Rewind to #${stepEnds[0]}, the end of step 1`);
const report = await rewind(store, session.id, { toSequence: stepEnds[0]! });
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

await store.close();
await rm(home, { recursive: true });
