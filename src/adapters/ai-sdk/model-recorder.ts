import type { LanguageModelMiddleware } from "ai";
import type { SessionStore } from "../../index.js";

type GenerateResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware["wrapGenerate"]>>>;
type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware["wrapStream"]>>>;
type StreamPart = StreamResult["stream"] extends ReadableStream<infer Part> ? Part : never;
type ToolCallPart = { type: "tool-call"; toolCallId: string; toolName: string; input: string };

/**
 * A language-model middleware that puts each model response on the tape as it arrives, before the SDK acts on
 * it: the assistant's text as a `message`, then one `tool_call` per call, appended before the SDK runs the
 * tool. With streaming, a call is appended before its chunk is passed on (the SDK starts a tool when its chunk
 * arrives). A failed append fails the model call, so no tool runs unrecorded. `recorded` collects the ids of the
 * calls written, so the tool wrapper does not write them twice.
 */
export function modelRecorder(
  store: SessionStore<any>,
  sessionId: string,
  recorded: Set<string>,
): LanguageModelMiddleware {
  /** Appends the assistant's message (unless `text` is undefined: already written) and the calls, in one write. */
  const append = async (text: string | undefined, calls: readonly ToolCallPart[]) => {
    const events: { type: string; payload: unknown }[] = [];
    if (text !== undefined) events.push({ type: "message", payload: { role: "assistant", content: text } });
    for (const call of calls)
      events.push({
        type: "tool_call",
        payload: { callId: call.toolCallId, name: call.toolName, input: parseInput(call.input) },
      });
    if (events.length === 0) return;
    await store.appendMany(sessionId, events as never);
    for (const call of calls) recorded.add(call.toolCallId);
  };

  return {
    specificationVersion: "v3",
    wrapGenerate: async ({ doGenerate }): Promise<GenerateResult> => {
      const result = await doGenerate();
      const text = result.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("");
      const calls = result.content.filter((part): part is ToolCallPart & typeof part => part.type === "tool-call");
      if (text !== "" || calls.length > 0) await append(text, calls);
      return result;
    },
    wrapStream: async ({ doStream }): Promise<StreamResult> => {
      const result = await doStream();
      let text = "";
      let messageWritten = false;
      const recorder = new TransformStream<StreamPart, StreamPart>({
        async transform(part, controller) {
          if (part.type === "text-delta") text += part.delta;
          if (part.type === "tool-call") {
            // The step's text so far goes first, once, so the tape reads message, then its calls.
            await append(messageWritten ? undefined : text, [part as ToolCallPart]);
            messageWritten = true;
          }
          if (part.type === "finish" && !messageWritten && text !== "") {
            await append(text, []);
            messageWritten = true;
          }
          controller.enqueue(part);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(recorder) };
    },
  };
}

/** The SDK hands tool input to the model layer as JSON text; the tape keeps it as a value when it parses. */
function parseInput(input: string): unknown {
  try {
    return JSON.parse(input);
  } catch {
    return input;
  }
}
