// `agent-tape/openai-agents`: agent-tape under the OpenAI Agents SDK (`@openai/agents`). See docs/ARCHITECTURE.md,
// "Adapters". Types only: nothing here imports the SDK at run time, so the core never needs its Node 22.
import type { AgentInputItem, Model, ModelRequest, Session, Tool } from "@openai/agents";
import {
  CheckpointStore,
  InvalidArgumentError,
  assertTouchesNameTools,
  checkpointTool,
  type SessionStore,
  type ToolTouches,
} from "../../index.js";
import {
  ITEM_TYPES,
  MARK_TYPES,
  answerInterruptedCalls,
  foldItems,
  itemKey,
  itemToEvent,
  openaiAgentsEvents,
} from "./items.js";
import { assertStoreKnows } from "../store-knows-events.js";

export { INTERRUPTED, openaiAgentsEvents } from "./items.js";

export interface OpenAIAgentsTapeOptions {
  /** A store that knows {@link openaiAgentsEvents}: `new SessionStore({ root, events: openaiAgentsEvents })`. */
  store: SessionStore<typeof openaiAgentsEvents>;
  /** The agent-tape session to record on (`store.create()` first); it is the SDK session's id too. */
  sessionId: string;
  /** @default a new CheckpointStore on `store` with its defaults */
  checkpoints?: CheckpointStore;
  /**
   * A tool call naming a path outside the workspace (`../x`, an absolute path elsewhere, a link leading out)
   * or `""`: `"refuse"` fails it before the tool runs, with an error the model reads naming the path and why;
   * `"allow"` runs it, the path recorded `skipped` (a rewind cannot undo what the tool did there).
   * @default "refuse"
   */
  outsidePaths?: "refuse" | "allow";
}

export interface OpenAIAgentsTape {
  /**
   * The SDK's `Session` on the tape: `run(agent, input, { session: tape.session })`. `getItems` folds the tape
   * (a call left without a result by a crash gets one saying it was interrupted); `addItems` appends only the
   * items the model and tools below have not already written; `popItem` and `clearSession` append a mark,
   * since the tape only grows (a rewind can bring the items back).
   */
  readonly session: Session;
  /**
   * The model, wrapped so each turn lands on the tape as it happens: the input items not yet on it (the user's
   * message, the results of the last turn's tools), then the response's items, before the runner runs a tool.
   * Without it the SDK hands its items to the session only when the run ends, and a rewind to before a tool
   * call, or a crash, would lose the conversation. A failed append fails the model call.
   */
  model(model: Model): Model;
  /**
   * The agent's tools with each function tool's `invoke` checkpointed fail-closed: the paths `touches` names
   * for its parsed input, or `"shell"` for a command (the workspace index). The call id is the SDK's
   * (`details.toolCall.callId`), so `rewind(store, id, { beforeCallId })` takes the id the model gave. The
   * call's items are the model's to write ({@link model}): a tool wrapper that wrote them too would put them
   * out of order when the runner hands the run to `addItems`.
   */
  tools<T extends Tool<any>>(tools: T[], touches?: Record<string, ToolTouches>): T[];
}

type FunctionCallItem = Extract<AgentInputItem, { type: "function_call" }>;
type Details = { toolCall?: FunctionCallItem; signal?: AbortSignal } | undefined;

/**
 * Records an OpenAI Agents SDK run on an agent-tape session, item by item as it happens:
 *
 *     const store = new SessionStore({ root, events: openaiAgentsEvents });
 *     const tape = openaiAgentsTape({ store, sessionId: (await store.create({ workspace })).id });
 *     const agent = new Agent({ name, model: tape.model(model), tools: tape.tools(tools, { edit: (i) => [i.path] }) });
 *     await run(agent, "fix the test", { session: tape.session });   // after a restart: the same line resumes
 */
export function openaiAgentsTape(options: OpenAIAgentsTapeOptions): OpenAIAgentsTape {
  const { store, sessionId } = options;
  if (typeof sessionId !== "string" || sessionId === "")
    throw new InvalidArgumentError("openaiAgentsTape() needs the `sessionId` to record on.");
  assertStoreKnows(store, openaiAgentsEvents, "openaiAgentsTape()", "openaiAgentsEvents", "agent-tape/openai-agents");
  const checkpoints = options.checkpoints ?? new CheckpointStore(store);
  // Keys of the items written ahead of the runner (by the model and the tools), not yet handed to `addItems`:
  // when the runner hands them over at the run's end, they are on the tape already.
  const writtenAhead = new Map<string, number>();
  const remember = (key: string) => writtenAhead.set(key, (writtenAhead.get(key) ?? 0) + 1);
  const forget = (key: string) => {
    const left = (writtenAhead.get(key) ?? 0) - 1;
    if (left > 0) writtenAhead.set(key, left);
    else writtenAhead.delete(key);
    return left >= 0;
  };

  const readItems = async () => foldItems(await store.readAll(sessionId, { types: [...ITEM_TYPES, ...MARK_TYPES] }));

  /**
   * The items of `items` whose keys are not among `onTape` (a multiset, consumed as matched), as events to
   * append in one write; they are remembered as written ahead.
   */
  const missing = (items: readonly AgentInputItem[], onTape: Map<string, number>) => {
    const fresh: AgentInputItem[] = [];
    for (const item of items) {
      const key = itemKey(item);
      const count = onTape.get(key) ?? 0;
      if (count > 0) onTape.set(key, count - 1);
      else fresh.push(item);
    }
    for (const item of fresh) remember(itemKey(item));
    return fresh.map(itemToEvent) as never[];
  };

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
      for (const { item } of await readItems()) onTape.set(itemKey(item), (onTape.get(itemKey(item)) ?? 0) + 1);
      const events = missing(items, onTape);
      if (events.length > 0) await held.appendMany(events);
    });
  };
  const recordOutput = async (output: readonly AgentInputItem[]) => {
    const events = missing(output, new Map());
    if (events.length > 0) await store.appendMany(sessionId, events);
  };

  const session: Session = {
    getSessionId: async () => sessionId,
    async getItems(limit?: number) {
      const items = answerInterruptedCalls((await readItems()).map((taped) => taped.item));
      return limit === undefined ? items : limit <= 0 ? [] : items.slice(-limit);
    },
    async addItems(items: AgentInputItem[]) {
      const fresh = items.filter((item) => !forget(itemKey(item)));
      if (fresh.length > 0) await store.appendMany(sessionId, fresh.map(itemToEvent) as never);
    },
    async popItem() {
      return store.withLock(sessionId, async (held) => {
        const last = (await readItems()).at(-1);
        if (last === undefined) return undefined;
        await held.append({ type: "openai_item_popped", payload: { sequence: last.sequence } });
        return last.item;
      });
    },
    async clearSession() {
      writtenAhead.clear();
      await store.append(sessionId, { type: "openai_items_cleared", payload: {} });
    },
  };

  return {
    session,
    model(model) {
      // Inherits from the model, so its other members (and `this` inside its methods) stay as they were.
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
    },
    tools(tools, touches = {}) {
      const functionTools = tools.flatMap((tool) => (tool.type === "function" ? [tool.name] : []));
      assertTouchesNameTools("tape.tools()", "the touches map", touches, functionTools);
      return tools.map((tool) => {
        if (tool.type !== "function") return tool;
        const invoke = tool.invoke.bind(tool);
        const checkpointed = checkpointTool(
          checkpoints,
          sessionId,
          tool.name,
          touches[tool.name],
          (_input: unknown, runContext: unknown, raw: string, details: Details) =>
            invoke(runContext as never, raw, details as never),
          {
            callIdOf: (_runContext, _raw, details: Details) => details?.toolCall?.callId,
            signalOf: (_runContext, _raw, details: Details) => details?.signal,
            ...(options.outsidePaths !== undefined && { outsidePaths: options.outsidePaths }),
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
            remember(itemKey(result));
          }
          return output;
        };
        return { ...tool, invoke: invokeCheckpointed } as typeof tool;
      });
    },
  };
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
