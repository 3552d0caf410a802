import type { StoredEvent } from "../core/events.js";
import type { CompactionPayload, MessagePayload, ToolCallPayload, ToolResultPayload } from "../core/events.js";

export interface ConversationToolCall {
  callId: string;
  name: string;
  input: unknown;
  sequence: number;
  /** Missing while the call has no result yet (the agent stopped mid-call). */
  result?: { output: unknown; isError: boolean; sequence: number };
}

export interface ConversationMessage {
  role: "system" | "user" | "assistant";
  content: MessagePayload["content"];
  sequence: number;
  /** Tool calls made after this (assistant) message, in order, with their results. */
  toolCalls: ConversationToolCall[];
}

export interface Conversation {
  messages: ConversationMessage[];
  /** Sequence of the last event folded. */
  lastSequence: number;
}

/**
 * Reducer that rebuilds the conversation from the tape: messages in order, each tool call
 * attached to the assistant message before it and each result to its call. A `compaction`
 * replaces everything through its `throughSequence` with a system message holding the summary.
 * Use with `store.fold(id, foldConversation, { messages: [], lastSequence: 0 })`.
 */
export function foldConversation(state: Conversation, event: StoredEvent): Conversation {
  state.lastSequence = event.sequence;
  switch (event.type) {
    case "message": {
      const p = event.payload as MessagePayload;
      state.messages.push({ role: p.role, content: p.content, sequence: event.sequence, toolCalls: [] });
      break;
    }
    case "tool_call": {
      const p = event.payload as ToolCallPayload;
      let owner = state.messages[state.messages.length - 1];
      if (owner?.role !== "assistant") {
        owner = { role: "assistant", content: "", sequence: event.sequence, toolCalls: [] };
        state.messages.push(owner);
      }
      owner.toolCalls.push({ callId: p.callId, name: p.name, input: p.input, sequence: event.sequence });
      break;
    }
    case "tool_result": {
      const p = event.payload as ToolResultPayload;
      for (let i = state.messages.length - 1; i >= 0; i--) {
        const call = state.messages[i]!.toolCalls.find((c) => c.callId === p.callId);
        if (call) {
          call.result = { output: p.output, isError: p.isError ?? false, sequence: event.sequence };
          break;
        }
      }
      break;
    }
    case "compaction": {
      const p = event.payload as CompactionPayload;
      const kept = state.messages.filter((m) => m.sequence > p.throughSequence);
      state.messages = [{ role: "system", content: p.summary, sequence: event.sequence, toolCalls: [] }, ...kept];
      break;
    }
  }
  return state;
}
