// agent-tape/openai-agents across kill -9, with the real `@openai/agents` (Node 22+:
// the "node22" project). A child runs a scripted agent (real file and shell tools, the tape as its Session) and is
// killed with SIGKILL while its 4th tool call (a shell command) runs. A new store then resumes from the tape: the
// Session's getItems gives the history with the killed call answered as interrupted, and a new run goes on from
// it. A rewind to before the 2nd tool call restores the files byte for byte and the conversation; undo puts back
// what the runs had done. One round per run mode (run, run with stream).
import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Agent, type AgentInputItem, run, setTracingDisabled } from "@openai/agents";
import { describe, expect, it } from "vitest";
import { INTERRUPTED, openaiAgentsEvents, openaiAgentsTape } from "../../src/adapters/openai-agents/index.js";
import { rewind, undoRewind } from "../../src/index.js";
import { Child } from "../helpers/children.js";
import { textFilesOf, treeOf } from "../helpers/workspace-tree.js";
import { TOUCHES, agentTools, scriptedModel } from "./openai-agents-agent.js";
import { openStore, tempDir } from "../helpers/fixture.js";

setTracingDisabled(true);

/** An item as `type:detail`, to compare lists of them. */
function short(item: AgentInputItem): string {
  const it = item as { type?: string; role?: string; callId?: string };
  if (it.type === "function_call" || it.type === "function_call_result") return `${it.type}:${it.callId}`;
  return `${it.type ?? "message"}:${it.role}`;
}

describe("agent-tape/openai-agents, killed mid-tool", () => {
  for (const mode of ["run", "stream"] as const) {
    it(`${mode}: getItems resumes from the tape; rewind before the 2nd call restores files; undo`, async () => {
      const base = await realpath(await tempDir("agent-tape-openai-agents-crash-"));
      const root = join(base, "sessions");
      const workspace = join(base, "ws");
      await mkdir(workspace);
      await writeFile(join(workspace, "todo.txt"), "- write the notes\n");
      const setup = openStore({ root, events: openaiAgentsEvents });
      const { id } = await setup.create({ workspace });
      await setup.close();

      const child = new Child("openai-agents-run.ts", [root, id, workspace, mode, "t4"]);
      await child.waitForLine((line) => line === "in-tool t4");
      const atKill = await textFilesOf(workspace);
      child.kill("SIGKILL");
      const ended = await child.done();
      expect(ended.signal).toBe("SIGKILL");
      expect(ended.stdout).not.toContain("finished");
      expect(atKill["notes.md"]).toBe("# Final notes\n");
      expect(atKill["todo.txt"]).toBeUndefined();

      // A new process: the Session reads the conversation back from the tape, t4 answered as interrupted.
      const store = openStore({ root, events: openaiAgentsEvents });
      const tape = openaiAgentsTape({ store, sessionId: id });
      const items = await tape.session.getItems();
      const t23 = ["function_call_result:t2", "function_call_result:t3"];
      expect(items.map(short)).toEqual([
        "message:user",
        "message:assistant",
        "function_call:t1",
        "function_call_result:t1",
        "message:assistant",
        "function_call:t2",
        "function_call:t3",
        // the two tools of a turn run concurrently; each result is on the tape as its tool returned
        ...(short(items[7]!) === t23[0] ? t23 : [...t23].reverse()),
        "message:assistant",
        "function_call:t4",
        "function_call_result:t4",
      ]);
      expect(items.at(-1)).toMatchObject({ status: "incomplete", output: { type: "text", text: INTERRUPTED } });

      // The run goes on from the tape: the model is sent that history, then the new message.
      const model = scriptedModel([
        {
          text: "Stamping again.",
          calls: [{ id: "t5", tool: "bash", input: { command: "echo stamped >> notes.md" } }],
        },
        { text: "Done.", calls: [] },
      ]);
      const agent = new Agent({
        name: "notes",
        model: tape.model(model),
        tools: tape.tools(agentTools(workspace), TOUCHES),
      });
      const resumed = await run(agent, "Go on.", { session: tape.session });
      expect(resumed.finalOutput).toBe("Done.");
      expect(model.inputs[0]).toEqual([...items, { type: "message", role: "user", content: "Go on." }]);
      expect(await readFile(join(workspace, "notes.md"), "utf8")).toBe("# Final notes\nstamped\n");
      const beforeRewind = await treeOf(workspace);

      await rewind(store, id, { beforeCallId: "t2" });
      expect(await textFilesOf(workspace)).toEqual({ "notes.md": "# Notes\n", "todo.txt": "- write the notes\n" });
      expect(Object.keys(await treeOf(workspace))).toEqual(["notes.md", "todo.txt"]); // gen/ is gone too
      expect((await tape.session.getItems()).map(short)).toEqual([
        "message:user",
        "message:assistant",
        "function_call:t1",
        "function_call_result:t1",
        "message:assistant",
      ]);

      await undoRewind(store, id);
      expect(await treeOf(workspace)).toEqual(beforeRewind);
      expect((await tape.session.getItems()).map(short).slice(-4)).toEqual([
        "message:assistant",
        "function_call:t5",
        "function_call_result:t5",
        "message:assistant",
      ]);
    });
  }
});
