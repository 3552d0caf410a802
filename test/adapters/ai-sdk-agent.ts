// A scripted Vercel AI SDK agent for the adapter tests: the SDK's own MockLanguageModelV3 replaying fixed steps
// (as a provider would return them, for generateText or streamText) and real file and shell tools.
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";

const run = promisify(execFile);

export interface ScriptedCall {
  id: string;
  tool: "write_file" | "edit_file" | "bash";
  input: Record<string, string>;
}
export interface ScriptedStep {
  text: string;
  calls: ScriptedCall[];
}

/** Four steps: write, then edit + a shell command, then another shell command, then the answer. */
export const STEPS: ScriptedStep[] = [
  {
    text: "Writing the notes.",
    calls: [{ id: "t1", tool: "write_file", input: { path: "notes.md", text: "# Notes\n" } }],
  },
  {
    text: "Editing, and generating the index.",
    calls: [
      { id: "t2", tool: "edit_file", input: { path: "notes.md", find: "# Notes", replace: "# Final notes" } },
      { id: "t3", tool: "bash", input: { command: "mkdir -p gen && ls > gen/index.txt && rm todo.txt" } },
    ],
  },
  { text: "Stamping.", calls: [{ id: "t4", tool: "bash", input: { command: "echo stamped >> notes.md" } }] },
  { text: "Done.", calls: [] },
];

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const finishOf = (step: ScriptedStep) =>
  step.calls.length ? { unified: "tool-calls" as const, raw: "tool_calls" } : { unified: "stop" as const, raw: "stop" };
const callPart = (call: ScriptedCall) =>
  ({ type: "tool-call", toolCallId: call.id, toolName: call.tool, input: JSON.stringify(call.input) }) as const;

/** The model for `steps`, answering generateText (doGenerate) and streamText (doStream) alike. */
export function scriptedModel(steps: readonly ScriptedStep[]): MockLanguageModelV3 {
  let next = 0;
  const take = () => {
    const step = steps[next++];
    if (!step) throw new Error(`the script has ${steps.length} steps; step ${next} was asked for`);
    return step;
  };
  return new MockLanguageModelV3({
    doGenerate: async () => {
      const step = take();
      return {
        content: [{ type: "text", text: step.text }, ...step.calls.map(callPart)],
        finishReason: finishOf(step),
        usage,
        warnings: [],
      };
    },
    doStream: async () => {
      const step = take();
      const parts = [
        { type: "stream-start", warnings: [] },
        { type: "text-start", id: "x" },
        ...step.text.split(" ").map((word, i) => ({ type: "text-delta", id: "x", delta: (i ? " " : "") + word })),
        { type: "text-end", id: "x" },
        ...step.calls.map(callPart),
        { type: "finish", finishReason: finishOf(step), usage },
      ];
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part as never);
            controller.close();
          },
        }),
      };
    },
  });
}

/** Real tools on `workspace`; `onCall` runs first in each (the tests use it to stop or kill at a given call). */
export function agentTools(workspace: string, onCall: (id: string) => Promise<void> | void = () => undefined) {
  return {
    write_file: tool({
      description: "Write a file.",
      inputSchema: z.object({ path: z.string(), text: z.string() }),
      execute: async ({ path, text }, { toolCallId }) => {
        await onCall(toolCallId);
        await writeFile(join(workspace, path), text);
        return `wrote ${path}`;
      },
    }),
    edit_file: tool({
      description: "Replace text in a file.",
      inputSchema: z.object({ path: z.string(), find: z.string(), replace: z.string() }),
      execute: async ({ path, find, replace }, { toolCallId }) => {
        await onCall(toolCallId);
        const before = await readFile(join(workspace, path), "utf8");
        await writeFile(join(workspace, path), before.replace(find, replace));
        return `edited ${path}`;
      },
    }),
    bash: tool({
      description: "Run a shell command in the workspace.",
      inputSchema: z.object({ command: z.string() }),
      execute: async ({ command }, { toolCallId }) => {
        await onCall(toolCallId);
        return (await run("sh", ["-c", command], { cwd: workspace })).stdout;
      },
    }),
  };
}

/** What each tool touches, for the tape's tool wrapper. */
export const TOUCHES = {
  write_file: (input: { path: string }) => [input.path],
  edit_file: (input: { path: string }) => [input.path],
  bash: "shell",
} as const;
