// Child process for the ai-sdk kill -9 test: a real `ai` 6 agent loop (generateText or streamText) with the SDK's
// mock model and real file and shell tools, recorded by agent-tape/ai-sdk. When the tool call `stopAt` starts it
// prints "in-tool <id>" and waits for ever: the parent kills it there (SIGKILL), mid-tool.
// argv: root sessionId workspace mode(generateText|streamText) stopAt
import { generateText, stepCountIs, streamText } from "ai";
import { aiSdkTape } from "../../src/adapters/ai-sdk/index.js";
import { SessionStore } from "../../src/index.js";
import { STEPS, TOUCHES, agentTools, scriptedModel } from "../adapters/ai-sdk-agent.js";

const [root, sessionId, workspace, mode, stopAt] = process.argv.slice(2);
if (!root || !sessionId || !workspace || !mode || !stopAt)
  throw new Error("usage: ai-sdk-agent-run root sessionId workspace mode stopAt");

const store = new SessionStore({ root });
const tape = aiSdkTape({ store, sessionId });
const tools = tape.tools(
  agentTools(workspace, async (id) => {
    if (id !== stopAt) return;
    process.stdout.write(`in-tool ${id}\n`);
    // Never returns: the parent kills the process here. The timer keeps the event loop alive; a bare pending
    // promise would not, and the child could exit on its own before the kill.
    await new Promise(() => setInterval(() => undefined, 60_000));
  }),
  TOUCHES,
);
const prompt = "Write the notes.";
await tape.user(prompt);
const args = { model: tape.model(scriptedModel(STEPS)), tools, prompt, stopWhen: stepCountIs(10) };
if (mode === "generateText") await generateText(args);
else await streamText(args).consumeStream();
process.stdout.write("finished\n");
await store.close();
