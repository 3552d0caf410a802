import type { ModelMessage, ToolResultPart } from "ai";
import type { Conversation, ConversationToolCall } from "../../index.js";

/** What a call that has no result on the tape (the process died while it ran) tells the model on resume. */
export const INTERRUPTED = "The tool call was interrupted before it finished: no result was recorded.";

/**
 * The tape's conversation as the SDK's model messages, to resume with `generateText({ messages })`: each
 * assistant message with its text and tool calls, followed by one tool message with their results. A call
 * without a result gets an error result saying so, since the SDK refuses a call left unanswered.
 */
export function toModelMessages(conversation: Conversation): ModelMessage[] {
  const messages: ModelMessage[] = [];
  for (const message of conversation.messages) {
    if (message.role !== "assistant") {
      messages.push({ role: message.role, content: message.content as string } as ModelMessage);
      continue;
    }
    const text = typeof message.content === "string" ? message.content : "";
    messages.push({
      role: "assistant",
      content: [
        ...(text === "" ? [] : [{ type: "text" as const, text }]),
        ...message.toolCalls.map((call) => ({
          type: "tool-call" as const,
          toolCallId: call.callId,
          toolName: call.name,
          input: call.input,
        })),
      ],
    });
    if (message.toolCalls.length > 0) messages.push({ role: "tool", content: message.toolCalls.map(resultPart) });
  }
  return messages;
}

function resultPart(call: ConversationToolCall): ToolResultPart {
  const base = { type: "tool-result" as const, toolCallId: call.callId, toolName: call.name };
  if (!call.result) return { ...base, output: { type: "error-text", value: INTERRUPTED } };
  const { output, isError } = call.result;
  if (isError) return { ...base, output: { type: "error-text", value: String(output) } };
  return typeof output === "string"
    ? { ...base, output: { type: "text", value: output } }
    : { ...base, output: { type: "json", value: (output ?? null) as never } };
}
