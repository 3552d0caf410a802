// A scripted Anthropic Messages API on 127.0.0.1, for running the real Claude Code (through the Claude Agent SDK)
// with no network and no key: ANTHROPIC_BASE_URL points at it. It streams each turn as the API does (SSE:
// message_start, content blocks, message_delta, message_stop). Which turn comes next is read from the request:
// the first turn of the script with a call the conversation has no tool_result for, or with no calls at all.
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface ClaudeCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}
export interface ClaudeTurn {
  text: string;
  calls: ClaudeCall[];
}

/** The tool_use ids the request's messages already have results for. */
function answered(messages: unknown): Set<string> {
  const ids = new Set<string>();
  for (const message of Array.isArray(messages) ? messages : [])
    for (const block of Array.isArray(message?.content) ? message.content : [])
      if (block?.type === "tool_result" && typeof block.tool_use_id === "string") ids.add(block.tool_use_id);
  return ids;
}

function nextTurn(script: readonly ClaudeTurn[], request: { messages?: unknown; tools?: { name?: string }[] }) {
  // A side request of Claude Code's own (a title, a summary) offers no tools: a word is enough.
  if (!request.tools?.some((tool) => tool.name === "Bash")) return { text: "ok", calls: [] };
  const done = answered(request.messages);
  const turn = script.find((t) => t.calls.length === 0 || t.calls.some((call) => !done.has(call.id)));
  if (!turn) throw new Error("the script is over");
  return turn;
}

function stream(turn: ClaudeTurn, model: string): string {
  const events: [string, Record<string, unknown>][] = [
    [
      "message_start",
      {
        message: {
          id: `msg_${Math.random().toString(36).slice(2)}`,
          type: "message",
          role: "assistant",
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 1 },
        },
      },
    ],
    ["content_block_start", { index: 0, content_block: { type: "text", text: "" } }],
    ["content_block_delta", { index: 0, delta: { type: "text_delta", text: turn.text } }],
    ["content_block_stop", { index: 0 }],
  ];
  turn.calls.forEach((call, i) => {
    events.push(
      [
        "content_block_start",
        { index: i + 1, content_block: { type: "tool_use", id: call.id, name: call.name, input: {} } },
      ],
      [
        "content_block_delta",
        { index: i + 1, delta: { type: "input_json_delta", partial_json: JSON.stringify(call.input) } },
      ],
      ["content_block_stop", { index: i + 1 }],
    );
  });
  events.push(
    [
      "message_delta",
      {
        delta: { stop_reason: turn.calls.length > 0 ? "tool_use" : "end_turn", stop_sequence: null },
        usage: { output_tokens: 5 },
      },
    ],
    ["message_stop", {}],
  );
  return events.map(([type, data]) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`).join("");
}

/**
 * Starts the API for `script` on a free port of 127.0.0.1; `answeredAtFirst` is what the first model request
 * (one offering tools) had results for: the history Claude Code sent, in order.
 */
export async function scriptedMessagesApi(script: readonly ClaudeTurn[]): Promise<{
  url: string;
  server: Server;
  answeredAtFirst: () => string[] | undefined;
}> {
  let first: string[] | undefined;
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const url = req.url ?? "";
      if (req.method === "POST" && url.startsWith("/v1/messages/count_tokens")) {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ input_tokens: 10 }));
        return;
      }
      if (req.method !== "POST" || !url.startsWith("/v1/messages")) {
        res.writeHead(404, { "content-type": "application/json" }).end("{}");
        return;
      }
      try {
        const request = JSON.parse(body);
        if (first === undefined && request.tools?.length) first = [...answered(request.messages)];
        res
          .writeHead(200, { "content-type": "text/event-stream" })
          .end(stream(nextTurn(script, request), request.model));
      } catch (error) {
        res
          .writeHead(500, { "content-type": "application/json" })
          .end(JSON.stringify({ type: "error", error: { type: "api_error", message: String(error) } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    answeredAtFirst: () => first,
  };
}
