import { readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CheckpointStore, SessionStore, isAgentTapeError, rewind, undoRewind } from "../../src/index.js";
import { TempRoots } from "../helpers/temp-root.js";
import { put } from "../helpers/rewind-workspace.js";

const temps = new TempRoots();
const stores: SessionStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  await temps.removeAll();
});

/**
 * #1 user message, #2 tool_call c1 (edit), #3 its checkpoint, #4 its after-state, #5 its result,
 * #6 assistant message, #7 tool_call c2 (a read: no checkpoint), #8 its result, #9 assistant message.
 */
async function session() {
  const base = await realpath(await temps.make("agent-tape-targets-"));
  const workspace = join(base, "ws");
  await put(workspace, "a.txt", "v0\n");
  const store = new SessionStore({ root: join(base, "sessions") });
  stores.push(store);
  const checkpoints = new CheckpointStore(store);
  const { id } = await store.create({ workspace });
  const say = (role: "user" | "assistant", content: string) =>
    store.append(id, { type: "message", payload: { role, content } });
  await say("user", "edit a.txt");
  await store.append(id, { type: "tool_call", payload: { callId: "c1", name: "edit", input: { path: "a.txt" } } });
  await checkpoints.around(id, { tool: "edit", paths: ["a.txt"], callId: "c1" }, () =>
    writeFile(join(workspace, "a.txt"), "v1\n"),
  );
  await store.append(id, { type: "tool_result", payload: { callId: "c1", output: "ok" } });
  await say("assistant", "edited");
  await store.append(id, { type: "tool_call", payload: { callId: "c2", name: "read", input: { path: "a.txt" } } });
  await store.append(id, { type: "tool_result", payload: { callId: "c2", output: "v1" } });
  await say("assistant", "read it");
  const read = () => readFile(join(workspace, "a.txt"), "utf8");
  return { store, id, read };
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("rewind and fork targets must be on the tape", () => {
  it("an existing sequence is rewound to", async () => {
    const s = await session();
    const report = await rewind(s.store, s.id, { toSequence: 6 });
    expect(report.targetSequence).toBe(6);
    expect(report.eventsRemoved).toBe(3);
  });

  it("a sequence cut by an earlier rewind is refused with SEQUENCE_NOT_ON_TAPE, naming its neighbours", async () => {
    const s = await session();
    await rewind(s.store, s.id, { toSequence: 6 }); // cuts #7-#9, marker #10
    const error = await errorOf(rewind(s.store, s.id, { toSequence: 8 }));
    expect(isAgentTapeError(error, "SEQUENCE_NOT_ON_TAPE"), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/#6.*#10/);
    expect((await s.store.readAll(s.id)).map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 10]);
  });

  it("a sequence re-appended under a new number by undo is refused too", async () => {
    const s = await session();
    await rewind(s.store, s.id, { toSequence: 6 }); // marker #10
    await undoRewind(s.store, s.id); // #7-#9 come back as #11-#13, marker #14
    const error = await errorOf(rewind(s.store, s.id, { toSequence: 8 }));
    expect(isAgentTapeError(error, "SEQUENCE_NOT_ON_TAPE"), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/#6.*#10/);
  });

  it("beyond the end stays SEQUENCE_OUT_OF_RANGE", async () => {
    const s = await session();
    const error = await errorOf(rewind(s.store, s.id, { toSequence: 10 }));
    expect(isAgentTapeError(error, "SEQUENCE_OUT_OF_RANGE"), String(error)).toBe(true);
  });

  it("a fork at a cut sequence is refused with SEQUENCE_NOT_ON_TAPE", async () => {
    const s = await session();
    await rewind(s.store, s.id, { toSequence: 6 });
    const error = await errorOf(s.store.fork(s.id, { atSequence: 8 }));
    expect(isAgentTapeError(error, "SEQUENCE_NOT_ON_TAPE"), String(error)).toBe(true);
    expect((await s.store.list()).length).toBe(1);
  });
});

describe("rewind({ beforeCallId }): just before a tool call", () => {
  it("for a call with a checkpoint: to the event before its tool_call, its edit undone", async () => {
    const s = await session();
    const report = await rewind(s.store, s.id, { beforeCallId: "c1" });
    expect(report.targetSequence).toBe(1);
    expect(await s.read()).toBe("v0\n");
  });

  it("for a call without a checkpoint: to the event before its tool_call", async () => {
    const s = await session();
    const report = await rewind(s.store, s.id, { beforeCallId: "c2" });
    expect(report.targetSequence).toBe(6);
    expect(await s.read()).toBe("v1\n");
  });

  it("for a call the tape only knows from its checkpoint (no tool_call event): before the checkpoint", async () => {
    const s = await session();
    await s.store.append(s.id, { type: "message", payload: { role: "user", content: "again" } }); // #10
    const checkpoints = new CheckpointStore(s.store);
    await checkpoints.capture(s.id, { tool: "edit", paths: ["a.txt"], callId: "c3" }); // #11
    const report = await rewind(s.store, s.id, { beforeCallId: "c3", dryRun: true });
    expect(report.targetSequence).toBe(10);
  });

  it("an unknown call id, or both forms at once, is INVALID_ARGUMENT", async () => {
    const s = await session();
    expect(isAgentTapeError(await errorOf(rewind(s.store, s.id, { beforeCallId: "nope" })), "INVALID_ARGUMENT")).toBe(
      true,
    );
    const both = errorOf(rewind(s.store, s.id, { toSequence: 1, beforeCallId: "c1" }));
    expect(isAgentTapeError(await both, "INVALID_ARGUMENT")).toBe(true);
  });
});
