import type { AgentInputItem } from "@openai/agents";
import stableStringify from "fast-json-stable-stringify";
import { z } from "zod";
import type { StoredEvent } from "../../index.js";

/**
 * The event types the adapter writes besides the built-in ones: an item with no built-in counterpart
 * (reasoning, hosted tool calls, compaction, …), and the marks `popItem` and `clearSession` leave on a tape that
 * only grows.
 */
export const openaiAgentsEvents = {
  openai_item: z.object({ item: z.looseObject({ type: z.string() }) }),
  openai_item_popped: z.object({ sequence: z.number().int().positive() }),
  openai_items_cleared: z.object({}),
};

/** The event types an item can be on: every one carries the SDK's item verbatim as `payload.item`. */
export const ITEM_TYPES = ["message", "tool_call", "tool_result", "openai_item"] as const;
export const MARK_TYPES = ["openai_item_popped", "openai_items_cleared"] as const;

/** What a call that has no result on the tape (the process died while it ran) tells the model on resume. */
export const INTERRUPTED = "The tool call was interrupted before it finished: no result was recorded.";

type Item = AgentInputItem & { type?: string; [key: string]: unknown };

/**
 * The event an item is written as: a message, function call or result as the built-in type (so `agent-tape
 * show`, the conversation fold and `rewind({ beforeCallId })` see them), anything else as `openai_item`.
 */
export function itemToEvent(item: AgentInputItem): { type: string; payload: Record<string, unknown> } {
  const it = item as Item;
  if (it.type === "function_call" && typeof it.callId === "string" && typeof it.name === "string")
    return {
      type: "tool_call",
      payload: { callId: it.callId, name: it.name, input: parseArguments(it.arguments), item },
    };
  if (it.type === "function_call_result" && typeof it.callId === "string")
    return { type: "tool_result", payload: { callId: it.callId, output: it.output, item } };
  if ((it.type === undefined || it.type === "message") && isRole(it.role) && isContent(it.content))
    return { type: "message", payload: { role: it.role, content: it.content, item } };
  return { type: "openai_item", payload: { item } };
}

/**
 * Which item this is, to tell one already on the tape from a new one: a function call or result by its call id
 * (unique in a conversation), anything else by its content, whatever the order of its keys.
 */
export function itemKey(item: AgentInputItem): string {
  const it = item as Item;
  if ((it.type === "function_call" || it.type === "function_call_result") && typeof it.callId === "string")
    return `${it.type} ${it.callId}`;
  return stableStringify(item);
}

/** One item on the tape, with the sequence of its event (what `popItem` marks). */
export interface TapedItem {
  sequence: number;
  item: AgentInputItem;
}

/**
 * The items on the tape, oldest first: each item event's `item`, less those a later `openai_item_popped` names,
 * and only those after the last `openai_items_cleared`. Events of the item types without an `item` (written by
 * other code) are not the SDK's items and are left out.
 */
export function foldItems(events: Iterable<StoredEvent>): TapedItem[] {
  let items: TapedItem[] = [];
  for (const event of events) {
    const payload = event.payload as { item?: unknown; sequence?: number };
    if (event.type === "openai_items_cleared") items = [];
    else if (event.type === "openai_item_popped") items = items.filter((taped) => taped.sequence !== payload.sequence);
    else if (payload.item !== undefined && typeof payload.item === "object")
      items.push({ sequence: event.sequence, item: payload.item as AgentInputItem });
  }
  return items;
}

/**
 * The items as the SDK can send them to a model: a function call with no result after it (the process died
 * while the tool ran) is followed by a result saying so, since the Responses API refuses a call left unanswered.
 */
export function answerInterruptedCalls(items: readonly AgentInputItem[]): AgentInputItem[] {
  const answered = new Set<string>();
  for (const item of items as Item[])
    if (item.type === "function_call_result" && typeof item.callId === "string") answered.add(item.callId);
  const out: AgentInputItem[] = [];
  for (const item of items as Item[]) {
    out.push(item);
    if (item.type === "function_call" && typeof item.callId === "string" && !answered.has(item.callId))
      out.push({
        type: "function_call_result",
        name: item.name as string,
        callId: item.callId,
        status: "incomplete",
        output: { type: "text", text: INTERRUPTED },
      } as AgentInputItem);
  }
  return out;
}

function parseArguments(text: unknown): unknown {
  if (typeof text !== "string") return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function isRole(role: unknown): role is "system" | "user" | "assistant" {
  return role === "system" || role === "user" || role === "assistant";
}

function isContent(content: unknown): boolean {
  return typeof content === "string" || Array.isArray(content);
}
