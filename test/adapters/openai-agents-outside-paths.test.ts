// agent-tape/openai-agents refuses a function tool call whose `touches` names a path outside the workspace, on
// Node 20: the adapter imports nothing of the SDK at run time, so its tool wrapping is driven here with a
// function tool of the SDK's shape (`type`, `name`, `invoke(runContext, rawInput, details)`). The SDK itself
// (Node 22) turns the thrown error into the tool output the model reads; openai-agents.node22.test.ts runs it.
import { mkdir, readFile, realpath, readdir } from "node:fs/promises";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, expect, it } from "vitest";
import { openaiAgentsEvents, openaiAgentsTape } from "../../src/adapters/openai-agents/index.js";
import { type SessionStore, isAgentTapeError } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

let base: string;
let workspace: string;
let store: SessionStore<typeof openaiAgentsEvents>;
let sessionId: string;

beforeEach(async () => {
  base = await realpath(await tempDir("agent-tape-openai-outside-"));
  workspace = join(base, "ws");
  await mkdir(workspace);
  store = openStore({ root: join(base, "sessions"), events: openaiAgentsEvents });
  sessionId = (await store.create({ workspace })).id;
});

function writeTool() {
  return {
    type: "function" as const,
    name: "write_file",
    invoke: async (_runContext: unknown, raw: string, _details?: unknown) => {
      const { path, text } = JSON.parse(raw) as { path: string; text: string };
      await writeFile(join(workspace, path), text);
      return `wrote ${path}`;
    },
  };
}

const details = (callId: string) => ({
  toolCall: { type: "function_call" as const, callId, name: "write_file", arguments: "" },
});

it("a function tool naming ../x is refused before it runs, with the path and why; allowed on request", async () => {
  const touches = { write_file: (input: { path: string }) => [input.path] };
  const [tool] = openaiAgentsTape({ store, sessionId }).tools([writeTool() as never], touches) as never as [
    ReturnType<typeof writeTool>,
  ];
  const raw = JSON.stringify({ path: "../escape.txt", text: "x" });
  const error = await tool.invoke({}, raw, details("c1") as never).catch((e: unknown) => e);
  expect(isAgentTapeError(error, "PATH_OUTSIDE_WORKSPACE")).toBe(true);
  expect((error as Error).message).toContain('"../escape.txt" leads outside the workspace');
  expect(await readdir(base)).not.toContain("escape.txt");

  const [allowed] = openaiAgentsTape({ store, sessionId, outsidePaths: "allow" }).tools(
    [writeTool() as never],
    touches,
  ) as never as [ReturnType<typeof writeTool>];
  expect(await allowed.invoke({}, raw, details("c2") as never)).toBe("wrote ../escape.txt");
  expect(await readFile(join(base, "escape.txt"), "utf8")).toBe("x");
});
