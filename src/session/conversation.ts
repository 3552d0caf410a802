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
      const call: ConversationToolCall = { callId: p.callId, name: p.name, input: p.input, sequence: event.sequence };
      owner.toolCalls.push(call);
      callsOf(state).add(call);
      break;
    }
    case "tool_result": {
      const p = event.payload as ToolResultPayload;
      const call = callsOf(state).take(p.callId);
      if (call) call.result = { output: p.output, isError: p.isError ?? false, sequence: event.sequence };
      break;
    }
    case "compaction": {
      const p = event.payload as CompactionPayload;
      const kept = state.messages.filter((m) => m.sequence > p.throughSequence);
      state.messages = [{ role: "system", content: p.summary, sequence: event.sequence, toolCalls: [] }, ...kept];
      indexes.delete(state); // calls compacted away must not take results any more: rebuilt on next use
      break;
    }
  }
  return state;
}

/**
 * The calls of a conversation by id, so a result finds its call in constant time whatever the
 * shape of the tape (a scan per result made thousands of back-to-back calls quadratic).
 */
class CallIndex {
  /** Calls still waiting for a result, oldest first, per id. */
  private readonly waiting = new Map<string, ConversationToolCall[]>();
  /** The most recent call per id: a repeated result (a retry) replaces its result. */
  private readonly latest = new Map<string, ConversationToolCall>();

  static of(messages: readonly ConversationMessage[]): CallIndex {
    const index = new CallIndex();
    for (const message of messages) for (const call of message.toolCalls) index.add(call);
    return index;
  }

  add(call: ConversationToolCall): void {
    this.latest.set(call.callId, call);
    if (call.result) return;
    const waiting = this.waiting.get(call.callId);
    if (waiting) waiting.push(call);
    else this.waiting.set(call.callId, [call]);
  }

  /** The call a result with this id belongs to: the most recent one still waiting, else the most recent. */
  take(callId: string): ConversationToolCall | undefined {
    const waiting = this.waiting.get(callId);
    const call = waiting?.pop();
    if (waiting?.length === 0) this.waiting.delete(callId);
    return call ?? this.latest.get(callId);
  }
}

// Kept beside the state rather than in it, so `Conversation` stays plain data; a state made
// elsewhere (a copy, JSON) gets its index built on first use.
const indexes = new WeakMap<Conversation, CallIndex>();

function callsOf(state: Conversation): CallIndex {
  let index = indexes.get(state);
  if (!index) {
    index = CallIndex.of(state.messages);
    indexes.set(state, index);
  }
  return index;
}
