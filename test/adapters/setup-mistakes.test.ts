// The mistakes a new user makes wiring an adapter, and what they are told: at the line they wrote, in the words
// they wrote it in (the option, the event set to pass, the tools they have), not at the first tool call, and not
// in the name of an internal function.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { aiSdkTape } from "../../src/adapters/ai-sdk/index.js";
import { claudeSessionStore } from "../../src/adapters/claude-agent-sdk/index.js";
import { openaiAgentsEvents, openaiAgentsTape } from "../../src/adapters/openai-agents/index.js";
import { CheckpointStore, withCheckpoints } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

let root: string;
let workspace: string;
beforeEach(async () => {
  const base = await tempDir("agent-tape-setup-");
  root = join(base, "sessions");
  workspace = join(base, "ws");
  await mkdir(workspace);
});

function open<E extends Record<string, never>>(events?: E) {
  const store = openStore(events ? { root, events } : { root });
  return store;
}

const write = async () => "ok";
const tools = { edit_file: { execute: write }, write_file: { execute: write }, bash: { execute: write } };

describe("a store without the adapter's event types", () => {
  it("openaiAgentsTape() refuses it at once, naming openaiAgentsEvents", async () => {
    const store = open();
    const { id } = await store.create({ workspace });
    const error = catchError(() => openaiAgentsTape({ store: store as never, sessionId: id }));
    expect(error.message).toContain("new SessionStore({ root, events: openaiAgentsEvents })");
    expect(error).toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("claudeSessionStore({ store }) refuses it at once, naming claudeEvents", () => {
    const store = open();
    const error = catchError(() => claudeSessionStore({ store: store as never }));
    expect(error.message).toContain("new SessionStore({ root, events: claudeEvents })");
    expect(error).toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("a store that knows them, with the user's own types besides, is taken", async () => {
    const store = openStore({ root, events: { ...openaiAgentsEvents } });
    const { id } = await store.create({ workspace });
    expect(() => openaiAgentsTape({ store, sessionId: id })).not.toThrow();
  });
});

describe("a touches map naming a tool that is not there (a typo)", () => {
  it("withCheckpoints() names its touches argument, the tools there are, and the closest one", async () => {
    const store = open();
    const { id } = await store.create({ workspace });
    const error = catchError(() =>
      withCheckpoints(tools, new CheckpointStore(store), id, { wrte_file: () => ["a.txt"] } as never),
    );
    expect(error.message).toContain('the touches argument names "wrte_file", which is none of the tools');
    expect(error.message).toContain("bash, edit_file, write_file");
    expect(error.message).toContain('Did you mean "write_file"?');
  });

  it("the AI SDK adapter's tape.tools() says so in its own name, not withCheckpoints()", async () => {
    const store = open();
    const { id } = await store.create({ workspace });
    const tape = aiSdkTape({ store, sessionId: id });
    const error = catchError(() => tape.tools(tools as never, { wrte: () => ["a.txt"] } as never));
    expect(error.message).toMatch(/^tape\.tools\(\): the touches map names "wrte"/);
    expect(error.message).not.toContain("withCheckpoints");
    expect(error.message).toContain("bash, edit_file, write_file");
  });

  it("the OpenAI Agents adapter's tape.tools() lists the function tools it was given", async () => {
    const store = open(openaiAgentsEvents as never);
    const { id } = await store.create({ workspace });
    const tape = openaiAgentsTape({ store: store as never, sessionId: id });
    const agentTools = ["edit_file", "bash"].map((name) => ({ type: "function", name, invoke: write }));
    const error = catchError(() => tape.tools(agentTools as never, { bsh: "shell" } as never));
    expect(error.message).toMatch(/^tape\.tools\(\): the touches map names "bsh"/);
    expect(error.message).toContain("bash, edit_file");
    expect(error.message).toContain('Did you mean "bash"?');
  });
});

function catchError(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a throw");
}
