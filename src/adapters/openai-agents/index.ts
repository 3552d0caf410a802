// `agent-tape/openai-agents`: agent-tape under the OpenAI Agents SDK (`@openai/agents`). See docs/ARCHITECTURE.md,
// "Adapters". Types only: nothing here imports the SDK at run time, so the core never needs its Node 22.
import type { Model, Session, Tool } from "@openai/agents";
import { CheckpointStore, InvalidArgumentError, type SessionStore, type ToolTouches } from "../../index.js";
import { assertStoreKnows } from "../store-knows-events.js";
import { checkpointedTools } from "./checkpointed-tools.js";
import { openaiAgentsEvents } from "./items.js";
import { recordingModel } from "./recording-model.js";
import { tapeSession } from "./tape-session.js";
import { itemsWrittenAhead } from "./written-ahead.js";

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
  const writtenAhead = itemsWrittenAhead();
  return {
    session: tapeSession(store, sessionId, writtenAhead),
    model: (model) => recordingModel(model, store, sessionId, writtenAhead),
    tools: (tools, touches = {}) =>
      checkpointedTools(
        { store, sessionId, checkpoints, writtenAhead, outsidePaths: options.outsidePaths },
        tools,
        touches,
      ),
  };
}
