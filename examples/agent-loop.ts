// `npm run demo`: a small tool-execution loop on agent-tape. A scripted stand-in plays the model;
// the tools are real and edit real files in a fresh temp folder. No network, no API key.
import { mkdir, mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
// In your project: from "agent-tape".
import { CheckpointStore, SessionStore, foldConversation, rewind, undoRewind } from "../src/index.js";
import type { Conversation, EventInput, BuiltinEvents } from "../src/index.js";
import {
  eventLine,
  heading,
  note,
  paint,
  printTree,
  printWorkspace,
  readWorkspace,
  sameWorkspace,
  shorten,
} from "./narrate.js";
import { fileTools, type Tool } from "./tools.js";
import { withCheckpoints } from "../src/index.js"; // in your project: from "agent-tape"

// ---- the stand-in for the model -------------------------------------------------------------
// Each user message gets a list of replies; the model answers with the next one not yet on the
// tape, so it continues correctly from any conversation, including one read back after a restart.
interface Reply {
  text: string;
  calls?: { name: string; input: Record<string, string> }[];
}
const script: { user: string; replies: Reply[] }[] = [
  {
    user: "greet() should say Hello, not Hi. Note it in a changelog.",
    replies: [
      { text: "Let me look at greet() first.", calls: [{ name: "read_file", input: { path: "src/greet.ts" } }] },
      {
        text: "Changing the greeting and adding CHANGELOG.md.",
        calls: [
          { name: "edit_file", input: { path: "src/greet.ts", find: '"Hi, "', replace: '"Hello, "' } },
          { name: "write_file", input: { path: "CHANGELOG.md", content: "# Changelog\n\n- greet() says Hello\n" } },
        ],
      },
      { text: "Done: greet() says Hello, and CHANGELOG.md records it." },
    ],
  },
  {
    user: "Add a test, give greet() a default name, and drop notes.txt.",
    replies: [
      {
        text: "Adding test/greet.test.ts, a default name, and removing notes.txt.",
        calls: [
          { name: "make_dir", input: { path: "test" } },
          {
            name: "write_file",
            input: {
              path: "test/greet.test.ts",
              content: 'import { greet } from "../src/greet.js";\nconsole.assert(greet() === "Hello, world");\n',
            },
          },
          { name: "edit_file", input: { path: "src/greet.ts", find: "name: string", replace: 'name = "world"' } },
          { name: "delete_file", input: { path: "notes.txt" } },
        ],
      },
      { text: "Done: test added, greet() defaults to world, notes.txt deleted." },
    ],
  },
  {
    user: "Also export a farewell().",
    replies: [
      {
        text: "Adding farewell() below greet().",
        calls: [
          {
            name: "edit_file",
            input: {
              path: "src/greet.ts",
              find: "}\n",
              replace: '}\n\nexport function farewell(name: string) {\n  return "Bye, " + name;\n}\n',
            },
          },
        ],
      },
      { text: "Done: farewell() is exported from src/greet.ts." },
    ],
  },
];

function scriptedModel(conversation: Conversation): Reply | undefined {
  const { messages } = conversation;
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  const turn = script[messages.filter((m) => m.role === "user").length - 1];
  return turn?.replies[messages.length - 1 - lastUser];
}

// ---- the agent: a loop that writes everything it does onto the tape ---------------------------
class Agent {
  /** The conversation is only ever a fold of the tape: what resume would rebuild, at every step. */
  private conversation: Conversation = { messages: [], lastSequence: 0 };
  private readonly tools: Record<string, Tool>;

  constructor(
    private readonly store: SessionStore,
    private readonly sessionId: string,
    workspace: string,
    resumed?: Conversation,
  ) {
    // Every tool that changes files snapshots its targets first; read_file runs as it is.
    this.tools = withCheckpoints(fileTools(workspace), new CheckpointStore(store), sessionId);
    if (resumed) this.conversation = resumed;
  }

  get lastSequence(): number {
    return this.conversation.lastSequence;
  }

  async turn(userText: string): Promise<void> {
    await this.record({ type: "message", payload: { role: "user", content: userText } });
    for (let reply = scriptedModel(this.conversation); reply; reply = scriptedModel(this.conversation)) {
      await this.record({ type: "message", payload: { role: "assistant", content: reply.text } });
      for (const call of reply.calls ?? []) await this.runTool(call.name, call.input);
    }
  }

  private async runTool(name: string, input: Record<string, string>): Promise<void> {
    const callId = `call_${this.conversation.messages.reduce((n, m) => n + m.toolCalls.length, 0) + 1}`;
    await this.record({ type: "tool_call", payload: { callId, name, input } });
    let result: { output: string; isError?: true };
    try {
      const tool = this.tools[name];
      if (!tool) throw new Error(`no tool named ${name}`);
      result = { output: await tool.execute(input, { toolCallId: callId }) };
    } catch (error) {
      // A failed tool is part of the conversation too: the model needs to see it.
      result = { output: (error as Error).message, isError: true };
    }
    await this.record({ type: "tool_result", payload: { callId, ...result } });
  }

  /** Appends one event, then prints and folds everything new on the tape (checkpoints included). */
  private async record(event: EventInput<BuiltinEvents>): Promise<void> {
    await this.store.append(this.sessionId, event);
    for await (const stored of this.store.read(this.sessionId, { fromSequence: this.conversation.lastSequence + 1 })) {
      console.log(eventLine(stored));
      this.conversation = foldConversation(this.conversation, stored);
    }
  }
}

// ---- the demo ---------------------------------------------------------------------------------
const home = await mkdtemp(join(tmpdir(), "agent-tape-demo-"));
const workspace = join(home, "workspace");
const root = join(home, "sessions");
await mkdir(join(workspace, "src"), { recursive: true });
await writeFile(join(workspace, "src/greet.ts"), 'export function greet(name: string) {\n  return "Hi, " + name;\n}\n');
await writeFile(join(workspace, "notes.txt"), "TODO: greet people properly\n");

console.log(
  paint("bold", "agent-tape demo: a tool loop whose every step is on a tape, and a rewind that puts files back"),
);
console.log(`  workspace  ${workspace}`);
console.log(`  sessions   ${root}`);

let store = new SessionStore({ root });
const session = await store.create({ title: "demo: greet()", workspace });
let agent = new Agent(store, session.id, workspace);

heading(`1. Turn one (session ${session.id})`);
note("Every message, tool call and result goes onto the tape. Each tool that changes files is");
note("preceded by a session_checkpoint: the bytes its targets had (a blob), or that they were absent.");
await agent.turn(script[0]!.user);
const endOfTurnOne = agent.lastSequence;
const filesAfterTurnOne = await readWorkspace(workspace);

heading("2. Turn two");
await agent.turn(script[1]!.user);
const filesAfterTurnTwo = await readWorkspace(workspace);

heading(`3. Rewind to #${endOfTurnOne}, the end of turn one`);
printWorkspace("files before the rewind:", filesAfterTurnTwo);
const report = await rewind(store, session.id, { toSequence: endOfTurnOne });
console.log(`  ${paint("bold", `rewind(store, id, { toSequence: ${endOfTurnOne} }) →`)}`);
for (const change of report.changes)
  console.log(
    `    ${paint(change.action === "delete" ? "red" : "green", change.action.padEnd(8))}${change.path}` +
      `${change.reason ? ` (${change.reason})` : ""}`,
  );
console.log(
  `    ${report.filesRestored} restored, ${report.filesDeleted} deleted, ${report.eventsRemoved} events removed, ` +
    `${report.blobsPruned} blobs pruned, marker #${report.markerSequence}`,
);
const filesAfterRewind = await readWorkspace(workspace);
printWorkspace("files after the rewind:", filesAfterRewind);
check(
  sameWorkspace(filesAfterRewind, filesAfterTurnOne),
  "the workspace is exactly what it was at the end of turn one",
);
const tapeAfterRewind = await store.readAll(session.id);
console.log(
  `  the tape now: #1–#${endOfTurnOne}, then ${eventLine(tapeAfterRewind[tapeAfterRewind.length - 1]!).trim()}`,
);
note(
  `#${endOfTurnOne + 1}–#${report.markerSequence! - 1} are cut, and their numbers are never reused: ` +
    "the marker takes the next one.",
);

heading("4. Changed our mind: undoRewind puts it all back");
const undone = await undoRewind(store, session.id);
for (const change of undone.changes)
  console.log(`    ${paint(change.action === "delete" ? "red" : "green", change.action.padEnd(8))}${change.path}`);
console.log(
  `    ${undone.filesRestored} restored, ${undone.filesDeleted} deleted, ${undone.eventsRestored} events ` +
    `re-appended as #${undone.markerSequence! - undone.eventsRestored}–#${undone.markerSequence! - 1}, ` +
    `marker #${undone.markerSequence}`,
);
const filesAfterUndo = await readWorkspace(workspace);
printWorkspace("files after the undo:", filesAfterUndo);
check(sameWorkspace(filesAfterUndo, filesAfterTurnTwo), "the workspace is exactly what it was before the rewind");

heading("5. Restart: a new process knows only what is on disk");
await store.close();
store = new SessionStore({ root });
const [found] = await store.list();
const conversation = await store.conversation(found!.id);
const calls = conversation.messages.flatMap((m) => m.toolCalls);
console.log(`  new SessionStore({ root }).list() → "${found!.title}", last event #${found!.lastSequence}`);
console.log(
  `  store.conversation(id) → ${conversation.messages.length} messages, ${calls.length} tool calls ` +
    `(${calls.filter((c) => c.result).length} with results), through #${conversation.lastSequence}`,
);
for (const message of conversation.messages) {
  const tools = message.toolCalls.map((c) => `${c.name}${c.result?.isError ? " ✗" : " ✓"}`).join(", ");
  console.log(
    `    ${message.role.padEnd(10)}${shorten(String(message.content), 58)}${tools ? paint("dim", `  [${tools}]`) : ""}`,
  );
}
console.log("  The stand-in model continues from that conversation:");
agent = new Agent(store, found!.id, workspace, conversation);
await agent.turn(script[2]!.user);
const resumed = await store.conversation(found!.id);
console.log(`  conversation now: ${resumed.messages.length} messages, through #${resumed.lastSequence}`);
await store.close();

heading("6. Where the session lives");
console.log(`  ${join(root, session.id)}/`);
await printTree(join(root, session.id), "    ");
note("events.jsonl  the tape, one JSON event per line (fewer lines than sequences: the rewind cut some)");
note("session.json  id, title, workspace and creation time, written once by create()");
note("blobs/        before-snapshots named by their sha256, shared by every checkpoint that needs them");
const records = await readdir(join(root, session.id, "records")).catch(() => []);
note(
  "records/      what undoRewind and crash recovery need between steps" +
    (records.length ? "" : " (nothing pending now)"),
);
// The exact next command, so a newcomer can look at the session with the CLI without guessing the root.
// `npx agent-tape` runs this repository's own bin (npm ci builds it); installed elsewhere it is plain `agent-tape`.
console.log("  Look at it with the CLI:");
console.log(`    npx agent-tape --root ${root} list`);
console.log(`  Nothing was deleted, so you can look around; then: rm -rf ${home}`);

function check(ok: boolean, claim: string): void {
  console.log(`  ${ok ? paint("green", "✓") : paint("red", "✗ NOT TRUE:")} ${claim}`);
  if (!ok) process.exitCode = 1;
}
