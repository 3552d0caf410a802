// Child process for the openai-agents kill -9 test (Node 22+, as `@openai/agents` needs): a real `@openai/agents`
// run (`run` or `run({ stream: true })`) with a scripted `Model` and real file and shell tools, recorded by
// agent-tape/openai-agents with the tape as the run's Session. When the tool call `stopAt` starts it prints
// "in-tool <id>" and waits for ever: the parent kills it there (SIGKILL), mid-tool.
// argv: root sessionId workspace mode(run|stream) stopAt
import { Agent, run, setTracingDisabled } from "@openai/agents";
import { openaiAgentsEvents, openaiAgentsTape } from "../../src/adapters/openai-agents/index.js";
import { SessionStore } from "../../src/index.js";
import { TOUCHES, TURNS, agentTools, scriptedModel } from "../adapters/openai-agents-agent.js";

const [root, sessionId, workspace, mode, stopAt] = process.argv.slice(2);
if (!root || !sessionId || !workspace || !mode || !stopAt)
  throw new Error("usage: openai-agents-run root sessionId workspace mode stopAt");

setTracingDisabled(true);
const store = new SessionStore({ root, events: openaiAgentsEvents });
const tape = openaiAgentsTape({ store, sessionId });
const tools = agentTools(workspace, async (id) => {
  if (id !== stopAt) return;
  process.stdout.write(`in-tool ${id}\n`);
  // Never returns: the parent kills the process here. The timer keeps the event loop alive; a bare pending
  // promise would not, and the child could exit on its own before the kill.
  await new Promise(() => setInterval(() => undefined, 60_000));
});
const agent = new Agent({ name: "notes", model: tape.model(scriptedModel(TURNS)), tools: tape.tools(tools, TOUCHES) });
const prompt = "Write the notes.";
if (mode === "run") await run(agent, prompt, { session: tape.session });
else {
  const streamed = await run(agent, prompt, { session: tape.session, stream: true });
  for await (const _ of streamed);
  await streamed.completed;
}
process.stdout.write("finished\n");
await store.close();
