// agent-tape/openai-agents against the real `@openai/agents` (which needs Node 22: this file is in the "node22"
// vitest project, which exists only on Node 22 and later; CI runs it on 22 and 24). `run` and streamed `run` with
// a scripted model and real file and shell tools: the items must be on the tape as they happen, read back as the
// SDK's own history, and a rewind to before a tool call must give back both the files and the conversation.
import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Agent, type AgentInputItem, run, setTracingDisabled } from "@openai/agents";
import { beforeEach, describe, expect, it } from "vitest";
import { INTERRUPTED, openaiAgentsEvents, openaiAgentsTape } from "../../src/adapters/openai-agents/index.js";
import { type SessionStore, isAgentTapeError, rewind, undoRewind } from "../../src/index.js";
import { TOUCHES, TURNS, agentTools, scriptedModel } from "./openai-agents-agent.js";
import { openStore, tempDir } from "../helpers/fixture.js";

setTracingDisabled(true);
let root: string;
let workspace: string;
let store: SessionStore<typeof openaiAgentsEvents>;
let sessionId: string;

beforeEach(async () => {
  const base = await realpath(await tempDir("agent-tape-openai-agents-"));
  root = join(base, "sessions");
  workspace = join(base, "ws");
  await mkdir(workspace);
  await writeFile(join(workspace, "todo.txt"), "- write the notes\n");
  store = openStore({ root, events: openaiAgentsEvents });
  sessionId = (await store.create({ workspace })).id;
});

/** Another reader of the same tape, as a second process would be. */
function otherStore() {
  const other = openStore({ root, events: openaiAgentsEvents });
  return other;
}

/** The tape as `type:detail`, for the event types the adapter writes. */
async function tape(): Promise<string[]> {
  const events = await store.readAll(sessionId, {
    types: ["message", "tool_call", "session_checkpoint", "tool_result"],
  });
  return events.map((e) =>
    e.type === "message" ? `message:${e.payload.role}` : `${e.type}:${e.payload.callId ?? ""}`,
  );
}

/** An item as `type:detail`, to compare lists of them. */
function short(item: AgentInputItem): string {
  const it = item as { type?: string; role?: string; callId?: string; status?: string };
  if (it.type === "function_call" || it.type === "function_call_result") return `${it.type}:${it.callId}`;
  return `${it.type ?? "message"}:${it.role}`;
}

/**
 * The items with each run of consecutive function results in call-id order: a turn's tools run concurrently and
 * each result is on the tape when its tool returns, while the SDK lists them in call order.
 */
function resultsInCallOrder(items: readonly AgentInputItem[]): AgentInputItem[] {
  const out: AgentInputItem[] = [];
  let run: AgentInputItem[] = [];
  const flush = () => {
    out.push(...run.sort((a, b) => short(a).localeCompare(short(b))));
    run = [];
  };
  for (const item of items) {
    if ((item as { type?: string }).type === "function_call_result") run.push(item);
    else {
      flush();
      out.push(item);
    }
  }
  flush();
  return out;
}

const PROMPT = "Write the notes.";

function agent(t: ReturnType<typeof openaiAgentsTape>, turns = TURNS, onCall?: (id: string) => Promise<void> | void) {
  const model = scriptedModel(turns);
  return {
    model,
    agent: new Agent({ name: "notes", model: t.model(model), tools: t.tools(agentTools(workspace, onCall), TOUCHES) }),
  };
}

describe("agent-tape/openai-agents", () => {
  for (const mode of ["run", "run (stream)"] as const) {
    it(`${mode}: items land as they happen, call > checkpoint > result; rewind before the 2nd call; undo`, async () => {
      const t = openaiAgentsTape({ store, sessionId });
      // What another process sees on the tape while a tool runs.
      const seenDuringCall = new Map<string, AgentInputItem[]>();
      const reader = openaiAgentsTape({ store: otherStore(), sessionId });
      const { agent: a } = agent(t, TURNS, async (id) => {
        seenDuringCall.set(id, await reader.session.getItems());
      });
      const result =
        mode === "run"
          ? await run(a, PROMPT, { session: t.session })
          : await run(a, PROMPT, { session: t.session, stream: true }).then(async (r) => {
              for await (const _ of r);
              await r.completed;
              return r;
            });
      expect(result.finalOutput).toBe("Done.");

      // Mid-run, not at its end: while t4 ran, the tape already held everything up to its call.
      expect(resultsInCallOrder(seenDuringCall.get("t4")!).map(short)).toEqual([
        "message:user",
        "message:assistant",
        "function_call:t1",
        "function_call_result:t1",
        "message:assistant",
        "function_call:t2",
        "function_call:t3",
        "function_call_result:t2",
        "function_call_result:t3",
        "message:assistant",
        "function_call:t4",
        // still running: a reader is told it was interrupted, so its history stays sendable
        "function_call_result:t4",
      ]);
      // Once the run is over the tape is the SDK's own history, each item once, as the runner handed it over.
      expect(resultsInCallOrder(await t.session.getItems())).toEqual(result.history);
      const lines = await tape();
      for (const id of ["t1", "t2", "t3", "t4"])
        expect(lines.filter((l) => l.endsWith(`:${id}`))).toEqual([
          `tool_call:${id}`,
          `session_checkpoint:${id}`,
          `tool_result:${id}`,
        ]);
      expect(await readFile(join(workspace, "notes.md"), "utf8")).toBe("# Final notes\nstamped\n");

      // Back to before the 2nd tool call, by the SDK's call id: the files as the 1st call left them, the shell's
      // work undone, and the conversation up to the assistant message that made the call.
      const report = await rewind(store, sessionId, { beforeCallId: "t2" });
      expect(report.filesRestored + report.filesDeleted).toBeGreaterThan(0);
      expect(await readFile(join(workspace, "notes.md"), "utf8")).toBe("# Notes\n");
      expect(await readFile(join(workspace, "todo.txt"), "utf8")).toBe("- write the notes\n");
      await expect(readFile(join(workspace, "gen/index.txt"))).rejects.toMatchObject({ code: "ENOENT" });
      expect((await t.session.getItems()).map(short)).toEqual([
        "message:user",
        "message:assistant",
        "function_call:t1",
        "function_call_result:t1",
        "message:assistant",
      ]);

      await undoRewind(store, sessionId);
      expect(await readFile(join(workspace, "notes.md"), "utf8")).toBe("# Final notes\nstamped\n");
      expect(resultsInCallOrder(await t.session.getItems())).toEqual(result.history);
    });
  }

  it("resumes: a new process's run gets the tape as its history and adds only its own items", async () => {
    const first = openaiAgentsTape({ store, sessionId });
    // The first run ends after two turns (max turns), its tools' results on the tape though no model saw them.
    const { agent: a } = agent(first, TURNS.slice(0, 2));
    await expect(run(a, PROMPT, { session: first.session, maxTurns: 2 })).rejects.toThrow(/max turns/i);

    const again = openaiAgentsTape({ store: otherStore(), sessionId });
    const items = await again.session.getItems();
    const history = resultsInCallOrder(items);
    expect(history.map(short)).toEqual([
      "message:user",
      "message:assistant",
      "function_call:t1",
      "function_call_result:t1",
      "message:assistant",
      "function_call:t2",
      "function_call:t3",
      "function_call_result:t2",
      "function_call_result:t3",
    ]);
    expect(history.at(-1)).toMatchObject({ status: "completed", output: { type: "text" } });
    const { agent: b, model } = agent(again, TURNS.slice(2));
    const resumed = await run(b, "Go on.", { session: again.session });
    expect(resumed.finalOutput).toBe("Done.");
    // The model was sent the history from the tape, then the new message; the tape gained only this run's items.
    expect(model.inputs[0]).toEqual([...items, { type: "message", role: "user", content: "Go on." }]);
    expect(resultsInCallOrder(await again.session.getItems()).map(short)).toEqual([
      ...history.map(short),
      "message:user",
      "message:assistant",
      "function_call:t4",
      "function_call_result:t4",
      "message:assistant",
    ]);
    expect(await readFile(join(workspace, "notes.md"), "utf8")).toBe("# Final notes\nstamped\n");
  });

  it("a call that never finished is answered as interrupted on resume, and the next run goes on from it", async () => {
    const first = openaiAgentsTape({ store, sessionId });
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reachedT4!: () => void;
    const atT4 = new Promise<void>((resolve) => {
      reachedT4 = resolve;
    });
    const { agent: a } = agent(first, TURNS, (id) => {
      if (id !== "t4") return;
      reachedT4();
      return stuck; // the process "dies" here: nothing after this point reaches the tape
    });
    const running = run(a, PROMPT, { session: first.session });
    await atT4;

    // A new process resumes while the old one is gone: t4 has no result on the tape.
    const again = openaiAgentsTape({ store: otherStore(), sessionId });
    const history = await again.session.getItems();
    expect(history.at(-1)).toMatchObject({
      type: "function_call_result",
      callId: "t4",
      status: "incomplete",
      output: { type: "text", text: INTERRUPTED },
    });
    const { agent: b, model } = agent(again, [{ text: "Stamped again, done.", calls: [] }]);
    const resumed = await run(b, "Go on.", { session: again.session });
    expect(resumed.finalOutput).toBe("Stamped again, done.");
    // The model was sent the whole history from the tape, the interrupted answer, then the new message.
    expect((model.inputs[0] as AgentInputItem[]).map(short)).toEqual([...history.map(short), "message:user"]);
    const after = (await again.session.getItems()).map(short);
    expect(after).toEqual([...history.map(short), "message:user", "message:assistant"]);
    expect(new Set(after.filter((s) => s.startsWith("function"))).size).toBe(
      after.filter((s) => s.startsWith("function")).length,
    );

    release();
    await running.catch(() => undefined);
  });

  it("getItems(limit), popItem and clearSession: marks on a tape that only grows", async () => {
    const t = openaiAgentsTape({ store, sessionId });
    const say = (text: string): AgentInputItem => ({ type: "message", role: "user", content: text });
    await t.session.addItems([say("one"), say("two"), say("three")]);
    expect(await t.session.getSessionId()).toBe(sessionId);
    expect(await t.session.getItems(2)).toEqual([say("two"), say("three")]);
    expect(await t.session.getItems(0)).toEqual([]);
    expect(await t.session.popItem()).toEqual(say("three"));
    expect(await t.session.getItems()).toEqual([say("one"), say("two")]);
    await t.session.clearSession();
    expect(await t.session.getItems()).toEqual([]);
    expect(await t.session.popItem()).toBeUndefined();
    await t.session.addItems([say("four")]);
    expect(
      await otherStore()
        .readAll(sessionId)
        .then((e) => e.length),
    ).toBe(6); // 3 items, a pop, a clear, 1 item
    expect(await openaiAgentsTape({ store: otherStore(), sessionId }).session.getItems()).toEqual([say("four")]);
  });

  it("fails closed: when the tape cannot be written, the model call fails and no tool runs", async () => {
    const t = openaiAgentsTape({ store, sessionId: "gone" });
    let ran = 0;
    const { agent: a } = agent(t, TURNS, () => {
      ran++;
    });
    const error = await run(a, PROMPT).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "SESSION_NOT_FOUND"), String(error)).toBe(true);
    expect(ran).toBe(0);
    await expect(readFile(join(workspace, "notes.md"))).rejects.toMatchObject({ code: "ENOENT" });
  });
});
