// The agent's function tools, each call checkpointed before it runs and its text result on the tape when it returns.
import type { AgentInputItem, Tool } from "@openai/agents";
import { type CheckpointStore, type ToolTouches, assertTouchesNameTools, checkpointTool } from "../../index.js";
import { itemKey, itemToEvent } from "./items.js";
import type { OpenAIAgentsStore } from "./tape-session.js";
import type { ItemsWrittenAhead } from "./written-ahead.js";

type FunctionCallItem = Extract<AgentInputItem, { type: "function_call" }>;
type Details = { toolCall?: FunctionCallItem; signal?: AbortSignal } | undefined;

/** What the wrapped tools record on, and how. */
export interface ToolTape {
  store: OpenAIAgentsStore;
  sessionId: string;
  checkpoints: CheckpointStore;
  writtenAhead: ItemsWrittenAhead;
  outsidePaths: "refuse" | "allow" | undefined;
}

/** The tools with each function tool's `invoke` checkpointed fail-closed; other tools as they are. */
export function checkpointedTools<T extends Tool<any>>(
  tape: ToolTape,
  tools: T[],
  touches: Record<string, ToolTouches>,
): T[] {
  const functionTools = tools.flatMap((tool) => (tool.type === "function" ? [tool.name] : []));
  assertTouchesNameTools("tape.tools()", "the touches map", touches, functionTools);
  return tools.map((tool) =>
    tool.type === "function" ? (checkpointedFunctionTool(tape, tool, touches[tool.name]) as T) : tool,
  );
}

type FunctionTool = Extract<Tool<any>, { type: "function" }>;

function checkpointedFunctionTool(tape: ToolTape, tool: FunctionTool, touches: ToolTouches | undefined): FunctionTool {
  const { store, sessionId } = tape;
  const invoke = tool.invoke.bind(tool);
  const checkpointed = checkpointTool(
    tape.checkpoints,
    sessionId,
    tool.name,
    touches,
    (_input: unknown, runContext: unknown, raw: string, details: Details) =>
      invoke(runContext as never, raw, details as never),
    {
      callIdOf: (_runContext, _raw, details: Details) => details?.toolCall?.callId,
      signalOf: (_runContext, _raw, details: Details) => details?.signal,
      ...(tape.outsidePaths !== undefined && { outsidePaths: tape.outsidePaths }),
    },
  );
  const invokeCheckpointed = async (runContext: unknown, raw: string, details?: Details) => {
    const output = await checkpointed(parseInput(raw), runContext, raw, details);
    const toolCall = details?.toolCall;
    // A text result is on the tape as soon as the tool returns, in the item the SDK makes of it (the tests
    // compare the two): a run that ends before its next model call (max turns, a crash) keeps it. Other
    // outputs the SDK shapes in ways of its own; they land with the next model call or at the run's end.
    if (toolCall !== undefined && typeof output === "string" && tool.outputSchema === undefined) {
      const result = textResultItem(toolCall, output);
      await store.append(sessionId, itemToEvent(result) as never);
      tape.writtenAhead.remember(itemKey(result));
    }
    return output;
  };
  return { ...tool, invoke: invokeCheckpointed } as typeof tool;
}

/** The `function_call_result` the SDK makes of a tool's text output (its `getToolCallOutputItem`). */
function textResultItem(call: FunctionCallItem, text: string): AgentInputItem {
  return {
    type: "function_call_result",
    name: call.name,
    ...(typeof call.namespace === "string" && { namespace: call.namespace }),
    callId: call.callId,
    status: "completed",
    output: { type: "text", text },
    ...(call.caller !== undefined && { caller: call.caller }),
  } as AgentInputItem;
}

/** The SDK hands a tool its input as JSON text; `touches` gets the value. */
function parseInput(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
