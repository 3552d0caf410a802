// `agent-tape/ai-sdk`: agent-tape under the Vercel AI SDK (`ai` 6 and later). See docs/ARCHITECTURE.md, "Adapters".
import { wrapLanguageModel, type LanguageModelMiddleware, type ModelMessage, type ToolSet } from "ai";
import {
  CheckpointStore,
  InvalidArgumentError,
  assertTouchesNameTools,
  withCheckpoints,
  type SessionStore,
  type ToolTouches,
} from "../../index.js";
import { toModelMessages } from "./messages.js";
import { modelRecorder } from "./model-recorder.js";

export { INTERRUPTED } from "./messages.js";

type LanguageModelV3 = Parameters<typeof wrapLanguageModel>[0]["model"];

export interface AiSdkTapeOptions {
  store: SessionStore<any>;
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

export interface AiSdkTape {
  readonly sessionId: string;
  /** Appends the user's message (do it before `generateText`/`streamText`; its `prompt` is not recorded). */
  user(content: string): Promise<void>;
  /**
   * The model, wrapped so each response is on the tape as it arrives: the assistant's text, then each tool
   * call, before the SDK runs the tool. A failed append fails the call (the SDK ignores errors thrown by its
   * own callbacks, so recording is done here and in the tools, not in `onStepFinish`).
   */
  model(model: LanguageModelV3): LanguageModelV3;
  /** The same recording as {@link model}, for a `wrapLanguageModel` chain of your own. */
  readonly middleware: LanguageModelMiddleware;
  /**
   * The tool set with each `execute` checkpointed fail-closed (the paths `touches` names, or `"shell"` for a
   * command, captured through the workspace index) and its result appended when it returns or throws. The
   * tape then reads: tool call, checkpoint, result.
   */
  tools<T extends ToolSet>(tools: T, touches?: { [Name in keyof T]?: ToolTouches }): T;
  /** The tape's conversation as model messages, to resume: `generateText({ model, tools, messages })`. */
  messages(): Promise<ModelMessage[]>;
}

/**
 * Records a Vercel AI SDK agent on an agent-tape session: wrap the model and the tools, and every step lands on
 * the tape as it happens, in causal order, for both `generateText` and `streamText`.
 *
 *     const tape = aiSdkTape({ store, sessionId });
 *     await tape.user(prompt);
 *     await generateText({ model: tape.model(model), tools: tape.tools(tools, { edit: (i) => [i.path] }), prompt });
 *     // after a restart: generateText({ model: tape.model(model), tools: …, messages: await tape.messages() })
 */
export function aiSdkTape(options: AiSdkTapeOptions): AiSdkTape {
  const { store, sessionId } = options;
  if (typeof sessionId !== "string" || sessionId === "")
    throw new InvalidArgumentError("aiSdkTape() needs the `sessionId` to record on.");
  const checkpoints = options.checkpoints ?? new CheckpointStore(store);
  // Calls the model recorder has written; the tools write the rest (a model used without `tape.model`).
  const recorded = new Set<string>();
  const middleware = modelRecorder(store, sessionId, recorded);
  return {
    sessionId,
    middleware,
    async user(content) {
      await store.append(sessionId, { type: "message", payload: { role: "user", content } });
    },
    model: (model) => wrapLanguageModel({ model, middleware }),
    tools: (tools, touches = {}) => {
      assertTouchesNameTools("tape.tools()", "the touches map", touches, Object.keys(tools));
      return withCheckpoints(tools, checkpoints, sessionId, touches as Record<string, ToolTouches>, {
        ...(options.outsidePaths !== undefined && { outsidePaths: options.outsidePaths }),
        async beforeCall(call) {
          if (call.callId !== undefined && recorded.has(call.callId)) return;
          await store.append(sessionId, {
            type: "tool_call",
            payload: { callId: call.callId ?? "", name: call.tool, input: call.input },
          });
        },
        async afterCall(call, outcome) {
          if (call.callId !== undefined) recorded.delete(call.callId);
          await store.append(sessionId, {
            type: "tool_result",
            payload: outcome.ok
              ? { callId: call.callId ?? "", output: outcome.output ?? null }
              : { callId: call.callId ?? "", output: errorText(outcome.error), isError: true },
          });
        },
      });
    },
    messages: async () => toModelMessages(await store.conversation(sessionId)),
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
