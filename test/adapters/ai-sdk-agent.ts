// A scripted Vercel AI SDK agent for the adapter tests: the SDK's own mock model replaying fixed steps (as a
// provider would return them, for generateText or streamText) and real file and shell tools. The mock is of the
// newest model interface the installed `ai` has: V3 with `ai` 6, V4 with `ai` 7 (CI runs these tests with both).
import { tool } from "ai";
import * as aiTest from "ai/test";
import { z } from "zod";
import { SCRIPT, type ScriptedCall, type ScriptedTurn, workOn } from "./scripted-work.js";

export type { ScriptedCall } from "./scripted-work.js";
export { TOUCHES } from "./scripted-work.js";
export type ScriptedStep = ScriptedTurn;
export const STEPS: ScriptedStep[] = SCRIPT;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const finishOf = (step: ScriptedStep) =>
  step.calls.length ? { unified: "tool-calls" as const, raw: "tool_calls" } : { unified: "stop" as const, raw: "stop" };
const callPart = (call: ScriptedCall) =>
  ({ type: "tool-call", toolCallId: call.id, toolName: call.tool, input: JSON.stringify(call.input) }) as const;

/** The model for `steps`, answering generateText (doGenerate) and streamText (doStream) alike. */
// `ai` 7's MockLanguageModelV4 takes the same results for what the script returns; `ai` 6 has no V4 (hence `any`).
const MockModel: typeof aiTest.MockLanguageModelV3 =
  (aiTest as Record<string, any>).MockLanguageModelV4 ?? aiTest.MockLanguageModelV3;

export function scriptedModel(steps: readonly ScriptedStep[]): InstanceType<typeof MockModel> {
  let next = 0;
  const take = () => {
    const step = steps[next++];
    if (!step) throw new Error(`the script has ${steps.length} steps; step ${next} was asked for`);
    return step;
  };
  return new MockModel({
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
  const work = workOn(workspace, onCall);
  return {
    write_file: tool({
      description: "Write a file.",
      inputSchema: z.object({ path: z.string(), text: z.string() }),
      execute: (input, { toolCallId }) => work.writeFile(input, toolCallId),
    }),
    edit_file: tool({
      description: "Replace text in a file.",
      inputSchema: z.object({ path: z.string(), find: z.string(), replace: z.string() }),
      execute: (input, { toolCallId }) => work.editFile(input, toolCallId),
    }),
    bash: tool({
      description: "Run a shell command in the workspace.",
      inputSchema: z.object({ command: z.string() }),
      execute: (input, { toolCallId }) => work.bash(input, toolCallId),
    }),
  };
}
