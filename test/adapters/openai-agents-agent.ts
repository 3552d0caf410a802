// A scripted OpenAI Agents SDK agent for the adapter tests: a `Model` replaying fixed turns (as the Responses API
// returns them, for `run` and `run({ stream: true })`) and real file and shell tools made with the SDK's `tool()`.
import { Usage, tool, type AgentOutputItem, type Model, type ModelRequest, type StreamEvent } from "@openai/agents";
import { z } from "zod";
import { SCRIPT, type ScriptedTurn, workOn } from "./scripted-work.js";

export type { ScriptedCall, ScriptedTurn } from "./scripted-work.js";
export { TOUCHES } from "./scripted-work.js";
export const TURNS: ScriptedTurn[] = SCRIPT;

function outputOf(turn: ScriptedTurn): AgentOutputItem[] {
  return [
    { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: turn.text }] },
    ...turn.calls.map(
      (call): AgentOutputItem => ({
        type: "function_call",
        callId: call.id,
        name: call.tool,
        arguments: JSON.stringify(call.input),
        status: "completed",
      }),
    ),
  ];
}

/** A model answering `turns` in order; `inputs` keeps a copy of what the runner sent it each time. */
export function scriptedModel(turns: readonly ScriptedTurn[]): Model & { inputs: ModelRequest["input"][] } {
  let next = 0;
  const inputs: ModelRequest["input"][] = [];
  const take = (request: ModelRequest) => {
    inputs.push(structuredClone(request.input));
    const turn = turns[next++];
    if (!turn) throw new Error(`the script has ${turns.length} turns; turn ${next} was asked for`);
    return { turn, id: `resp_${next}` };
  };
  return {
    inputs,
    async getResponse(request) {
      const { turn, id } = take(request);
      return {
        usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 5 }),
        output: outputOf(turn),
        responseId: id,
      };
    },
    async *getStreamedResponse(request): AsyncIterable<StreamEvent> {
      const { turn, id } = take(request);
      yield { type: "response_started" };
      for (const word of turn.text.split(" ")) yield { type: "output_text_delta", delta: `${word} ` };
      yield {
        type: "response_done",
        response: {
          id,
          usage: { requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 },
          output: outputOf(turn) as never, // a Responses API stream's items: the same as a response's
        },
      };
    },
  };
}

/** Real tools on `workspace`; `onCall` runs first in each (the tests use it to look at the tape mid-call). */
export function agentTools(workspace: string, onCall: (id: string) => Promise<void> | void = () => undefined) {
  const callId = (details: { toolCall?: { callId: string } } | undefined) => details?.toolCall?.callId ?? "";
  const work = workOn(workspace, onCall);
  return [
    tool({
      name: "write_file",
      description: "Write a file.",
      parameters: z.object({ path: z.string(), text: z.string() }),
      execute: (input, _context, details) => work.writeFile(input, callId(details)),
    }),
    tool({
      name: "edit_file",
      description: "Replace text in a file.",
      parameters: z.object({ path: z.string(), find: z.string(), replace: z.string() }),
      execute: (input, _context, details) => work.editFile(input, callId(details)),
    }),
    tool({
      name: "bash",
      description: "Run a shell command in the workspace.",
      parameters: z.object({ command: z.string() }),
      execute: (input, _context, details) => work.bash(input, callId(details)),
    }),
  ];
}
