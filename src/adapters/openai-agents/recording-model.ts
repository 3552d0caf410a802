// The model, wrapped so each turn lands on the tape as it happens.
import type { AgentInputItem, Model, ModelRequest } from "@openai/agents";
import { itemKey } from "./items.js";
import { type OpenAIAgentsStore, readItems } from "./tape-session.js";
import type { ItemsWrittenAhead } from "./written-ahead.js";

/**
 * `model`, inheriting from it (so its other members, and `this` inside its methods, stay as they were), with each
 * response's input items not yet on the tape written before the call and its output items after it.
 */
export function recordingModel(
  model: Model,
  store: OpenAIAgentsStore,
  sessionId: string,
  writtenAhead: ItemsWrittenAhead,
): Model {
  /**
   * The model's input: whatever of it is not on the tape yet is what happened since the last model call (the
   * user's message, the last turn's tool results). Read and written under the lock, so two writers do not both
   * add the same item.
   */
  const recordInput = async (input: ModelRequest["input"]) => {
    const items: AgentInputItem[] =
      typeof input === "string" ? [{ type: "message", role: "user", content: input } as AgentInputItem] : input;
    await store.withLock(sessionId, async (held) => {
      const onTape = new Map<string, number>();
      for (const { item } of await readItems(store, sessionId))
        onTape.set(itemKey(item), (onTape.get(itemKey(item)) ?? 0) + 1);
      const events = writtenAhead.missing(items, onTape);
      if (events.length > 0) await held.appendMany(events);
    });
  };
  const recordOutput = async (output: readonly AgentInputItem[]) => {
    const events = writtenAhead.missing(output, new Map());
    if (events.length > 0) await store.appendMany(sessionId, events);
  };

  const wrapped: Model = Object.create(model);
  wrapped.getResponse = async (request) => {
    await recordInput(request.input);
    const response = await model.getResponse(request);
    await recordOutput(response.output as AgentInputItem[]);
    return response;
  };
  wrapped.getStreamedResponse = async function* (request) {
    await recordInput(request.input);
    for await (const event of model.getStreamedResponse(request)) {
      // The runner acts on a streamed turn once it is done: its items are written before that event goes on.
      if (event.type === "response_done") await recordOutput(event.response.output as AgentInputItem[]);
      yield event;
    }
  };
  return wrapped;
}
