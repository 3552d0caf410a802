// Child process for the claude-agent-sdk kill -9 test: the real Claude Code (the Claude Agent SDK's `query()` and
// the binary its package brings) against a scripted Messages API on 127.0.0.1, with agent-tape/claude-agent-sdk as
// its `sessionStore` and its `checkpointHooks()` around Claude Code's own Write, Edit and Bash tools. The parent
// runs it isolated (test/helpers/children.ts): no network but the loopback, and a kill takes the whole tree.
// "start" runs the four turns of test/adapters/scripted-work.ts; the call `stopAt` (a Bash one) writes `marker`
// and sleeps, so the parent can kill it mid-tool. "resume" resumes the Claude session from the tape and runs one
// more command. argv: sdkEntry root workspace claudeSessionId mode(start|resume) stopAt marker
import { join } from "node:path";
import { claudeSessionStore } from "../../src/adapters/claude-agent-sdk/index.js";
import { type ClaudeTurn, scriptedMessagesApi } from "../adapters/claude-messages-api.js";
import { SCRIPT, type ScriptedCall } from "../adapters/scripted-work.js";

const [sdkEntry, root, workspace, sessionId, mode, stopAt, marker] = process.argv.slice(2);
if (!sdkEntry || !root || !workspace || !sessionId || !mode || !stopAt || !marker)
  throw new Error("usage: claude-agent-run sdkEntry root workspace claudeSessionId mode stopAt marker");

/** The shared script's calls as Claude Code's own tools take them (absolute paths). */
function asClaude(call: ScriptedCall) {
  const input = call.input as Record<string, string>;
  if (call.tool === "write_file")
    return { id: call.id, name: "Write", input: { file_path: join(workspace!, input.path!), content: input.text } };
  if (call.tool === "edit_file")
    return {
      id: call.id,
      name: "Edit",
      input: { file_path: join(workspace!, input.path!), old_string: input.find, new_string: input.replace },
    };
  // The call to be killed in says so outside the workspace, then waits for the kill.
  const command = call.id === stopAt ? `echo ${call.id} > ${marker} && sleep 600 && ${input.command}` : input.command;
  return { id: call.id, name: "Bash", input: { command, description: `call ${call.id}` } };
}

const script: ClaudeTurn[] =
  mode === "start"
    ? SCRIPT.map((turn) => ({ text: turn.text, calls: turn.calls.map(asClaude) }))
    : [
        {
          text: "Stamping again.",
          calls: [asClaude({ id: "t5", tool: "bash", input: { command: "echo stamped >> notes.md" } })],
        },
        { text: "Done.", calls: [] },
      ];
const api = await scriptedMessagesApi(script);
const { query } = await import(sdkEntry);
const sessionStore = claudeSessionStore({ root, workspace });
const options = {
  cwd: workspace,
  model: "claude-sonnet-4-5",
  // Claude Code refuses to skip its permission prompts as root (CI is root): the tools are allowed by name.
  allowedTools: ["Write", "Edit", "Bash"],
  settingSources: [],
  sessionStore,
  sessionStoreFlush: "eager",
  // Under a loaded CI the mirrored entry may take longer than the default 2 s; it ends the wait once it is in.
  hooks: sessionStore.checkpointHooks({ entryWaitMs: 20_000 }),
  ...(mode === "start" ? { sessionId } : { resume: sessionId }),
  env: {
    ...process.env,
    ANTHROPIC_BASE_URL: api.url,
    ANTHROPIC_API_KEY: "sk-ant-test-no-network",
    CLAUDE_CONFIG_DIR: join(root, "..", `claude-config-${mode}`),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
  },
  stderr: (text: string) => process.stderr.write(text),
};
for await (const message of query({ prompt: mode === "start" ? "Write the notes." : "Go on.", options })) {
  if (message.type === "result") process.stdout.write(`result ${message.subtype} ${message.result ?? ""}\n`);
  if (message.type === "system" && message.subtype === "mirror_error")
    process.stdout.write(`mirror_error ${JSON.stringify(message)}\n`);
}
process.stdout.write(`history ${api.answeredAtFirst()?.join(",")}\n`);
process.stdout.write("finished\n");
await sessionStore.close();
api.server.close();
