import { readFile, readdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CheckpointStore,
  type SessionStore,
  forkIntoWorkspace,
  isAgentTapeError,
  rewind,
  undoRewind,
} from "../../src/index.js";
import { put } from "../helpers/rewind-workspace.js";
import { openStore, tempDir } from "../helpers/fixture.js";

/**
 * #1 user message, #2 tool_call c1 (edit), #3 its checkpoint, #4 its after-state, #5 its result,
 * #6 assistant message, #7 tool_call c2 (a read: no checkpoint), #8 its result, #9 assistant message.
 */
async function session() {
  const base = await realpath(await tempDir("agent-tape-targets-"));
  const workspace = join(base, "ws");
  await put(workspace, "a.txt", "v0\n");
  const store = openStore({ root: join(base, "sessions") });
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
  return { store, id, read, base };
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
    expect(error).toMatchObject({ sequence: 8, before: 6, after: 10 });
  });

  it("beyond the end stays SEQUENCE_OUT_OF_RANGE", async () => {
    const s = await session();
    const error = await errorOf(rewind(s.store, s.id, { toSequence: 10 }));
    expect(isAgentTapeError(error, "SEQUENCE_OUT_OF_RANGE"), String(error)).toBe(true);
    expect(error).toMatchObject({ sequence: 10, lastSequence: 9 });
  });

  it("a fork at a cut sequence is refused with SEQUENCE_NOT_ON_TAPE", async () => {
    const s = await session();
    await rewind(s.store, s.id, { toSequence: 6 });
    const error = await errorOf(s.store.fork(s.id, { atSequence: 8 }));
    expect(isAgentTapeError(error, "SEQUENCE_NOT_ON_TAPE"), String(error)).toBe(true);
    expect(error).toMatchObject({ sequence: 8, before: 6, after: 10 });
    expect((await s.store.list()).length).toBe(1);
  });
});

describe("fork targets, every form, for store.fork and forkIntoWorkspace", () => {
  /** A fork of either kind, into a new folder under the test's base for forkIntoWorkspace. */
  const forks = {
    "store.fork": (s: Awaited<ReturnType<typeof session>>, at: { atSequence?: number; beforeCallId?: string }) =>
      s.store.fork(s.id, at),
    forkIntoWorkspace: async (
      s: Awaited<ReturnType<typeof session>>,
      at: { atSequence?: number; beforeCallId?: string },
    ) => (await forkIntoWorkspace(s.store, s.id, { ...at, workspace: join(s.base, "fork") })).session,
  };

  for (const [kind, fork] of Object.entries(forks)) {
    it(`${kind}: an existing sequence is forked at`, async () => {
      const s = await session();
      const info = await fork(s, { atSequence: 6 });
      expect(info.parent).toEqual({ id: s.id, atSequence: 6 });
      expect((await s.store.readAll(info.id)).map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    });

    it(`${kind}: a cut sequence is SEQUENCE_NOT_ON_TAPE naming its neighbours; nothing made`, async () => {
      const s = await session();
      await rewind(s.store, s.id, { toSequence: 6 }); // cuts #7-#9, marker #10
      const error = await errorOf(fork(s, { atSequence: 8 }));
      expect(isAgentTapeError(error, "SEQUENCE_NOT_ON_TAPE"), String(error)).toBe(true);
      expect(error).toMatchObject({ sequence: 8, before: 6, after: 10 });
      expect((error as Error).message).toMatch(/#6 and #10/);
      expect((await s.store.list()).length).toBe(1);
      expect(await readdir(s.base)).not.toContain("fork");
    });

    it(`${kind}: a sequence re-appended by undo is SEQUENCE_NOT_ON_TAPE naming its neighbours`, async () => {
      const s = await session();
      await rewind(s.store, s.id, { toSequence: 6 });
      await undoRewind(s.store, s.id); // #7-#9 come back as #11-#13, marker #14
      const error = await errorOf(fork(s, { atSequence: 9 }));
      expect(isAgentTapeError(error, "SEQUENCE_NOT_ON_TAPE"), String(error)).toBe(true);
      expect(error).toMatchObject({ sequence: 9, before: 6, after: 10 });
      expect((await s.store.list()).length).toBe(1);
    });

    it(`${kind}: beyond the end is SEQUENCE_OUT_OF_RANGE naming the last sequence`, async () => {
      const s = await session();
      const error = await errorOf(fork(s, { atSequence: 10 }));
      expect(isAgentTapeError(error, "SEQUENCE_OUT_OF_RANGE"), String(error)).toBe(true);
      expect(error).toMatchObject({ sequence: 10, lastSequence: 9 });
      expect((error as Error).message).toContain("0..9");
      expect((await s.store.list()).length).toBe(1);
    });

    it(`${kind}: beforeCallId of a call with a checkpoint forks just before its tool_call`, async () => {
      const s = await session();
      const info = await fork(s, { beforeCallId: "c1" });
      expect(info.parent).toEqual({ id: s.id, atSequence: 1 });
      expect((await s.store.readAll(info.id)).map((e) => e.type)).toEqual(["message", "session_fork"]);
      if (info.workspace !== undefined && kind === "forkIntoWorkspace")
        expect(await readFile(join(info.workspace, "a.txt"), "utf8")).toBe("v0\n");
    });

    it(`${kind}: beforeCallId of a call without a checkpoint forks just before its tool_call`, async () => {
      const s = await session();
      const info = await fork(s, { beforeCallId: "c2" });
      expect(info.parent).toEqual({ id: s.id, atSequence: 6 });
      if (kind === "forkIntoWorkspace") expect(await readFile(join(info.workspace!, "a.txt"), "utf8")).toBe("v1\n");
    });

    it(`${kind}: beforeCallId of a call known only from its checkpoint forks just before the checkpoint`, async () => {
      const s = await session();
      await s.store.append(s.id, { type: "message", payload: { role: "user", content: "again" } }); // #10
      await new CheckpointStore(s.store).capture(s.id, { tool: "edit", paths: ["a.txt"], callId: "c3" }); // #11
      const info = await fork(s, { beforeCallId: "c3" });
      expect(info.parent).toEqual({ id: s.id, atSequence: 10 });
    });

    it(`${kind}: an unknown call id, or both forms at once, is INVALID_ARGUMENT; nothing made`, async () => {
      const s = await session();
      const unknown = await errorOf(fork(s, { beforeCallId: "nope" }));
      expect(isAgentTapeError(unknown, "INVALID_ARGUMENT"), String(unknown)).toBe(true);
      expect((unknown as Error).message).toContain('No tool call "nope"');
      const both = await errorOf(fork(s, { atSequence: 1, beforeCallId: "c1" }));
      expect(isAgentTapeError(both, "INVALID_ARGUMENT"), String(both)).toBe(true);
      const empty = await errorOf(fork(s, { beforeCallId: "" }));
      expect(isAgentTapeError(empty, "INVALID_ARGUMENT"), String(empty)).toBe(true);
      expect((await s.store.list()).length).toBe(1);
      expect(await readdir(s.base)).not.toContain("fork");
    });
  }
});

describe("rewind({ beforeCallId }) found going back from the end", () => {
  type Call = (type: "tool_call" | "session_checkpoint") => Promise<number>;
  async function tape(shape: (say: (n: number) => Promise<unknown>, call: Call) => Promise<void>) {
    const root = await tempDir("agent-tape-call-back-");
    const store = openStore({ root, durability: "none" });
    const { id } = await store.create();
    const say = (n: number) => store.append(id, { type: "message", payload: { role: "user", content: `m${n}` } });
    const call = async (type: "tool_call" | "session_checkpoint") => {
      const payload =
        type === "tool_call"
          ? { callId: "c", name: "edit", input: {} }
          : { tool: "edit", callId: "c", workspace: root, files: [] };
      return (await store.append(id, { type, payload } as Parameters<typeof store.append>[1])).sequence;
    };
    await shape(say, call);
    return { store, id };
  }
  const targetOf = async (t: { store: SessionStore; id: string }) =>
    (await rewind(t.store, t.id, { beforeCallId: "c", mode: "conversation", dryRun: true })).targetSequence;

  it("a tool_call first in its window (255 events after it): the event before it, from the window before", async () => {
    const t = await tape(async (say, call) => {
      for (let n = 0; n < 300; n++) await say(n);
      await call("tool_call");
      for (let n = 0; n < 255; n++) await say(n);
    });
    expect(await targetOf(t)).toBe(300);
  });

  it("an id two tool calls used: just before the latest (the first one is not looked for)", async () => {
    const t = await tape(async (say, call) => {
      await say(0);
      await call("tool_call");
      for (let n = 0; n < 500; n++) await say(n);
      await call("tool_call"); // #503
      await say(0);
    });
    expect(await targetOf(t)).toBe(502);
  });

  it("a tool_call that is the tape's first event: 0", async () => {
    const t = await tape(async (say, call) => {
      await call("tool_call");
      for (let n = 0; n < 600; n++) await say(n);
    });
    expect(await targetOf(t)).toBe(0);
  });

  it("checkpoints only: before the first of them, however far back; else before the tool_call", async () => {
    const onlyCheckpoints = await tape(async (say, call) => {
      for (let n = 0; n < 10; n++) await say(n);
      await call("session_checkpoint"); // #11
      for (let n = 0; n < 1000; n++) await say(n);
      await call("session_checkpoint");
      await say(0);
    });
    expect(await targetOf(onlyCheckpoints)).toBe(10);
    const both = await tape(async (say, call) => {
      for (let n = 0; n < 700; n++) await say(n);
      await call("tool_call"); // #701
      await call("session_checkpoint");
      for (let n = 0; n < 3; n++) await say(n);
    });
    expect(await targetOf(both)).toBe(700);
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
