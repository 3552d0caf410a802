import { readdir, readFile, readlink, appendFile, stat, writeFile } from "node:fs/promises";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type SessionStore, isAgentTapeError, type HeldSession, type StoredEvent } from "../../src/index.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { openStore, tempDir, tempStore } from "../helpers/fixture.js";

function say(content: string) {
  return { type: "message" as const, payload: { role: "user" as const, content } };
}

async function appendMessages(store: SessionStore, id: string, count: number): Promise<StoredEvent[]> {
  const written: StoredEvent[] = [];
  for (let i = 1; i <= count; i++) written.push(await store.append(id, say(`message ${i}`)));
  return written;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("create", () => {
  it("makes an empty session that get() returns, with its workspace stored absolute", async () => {
    const { store } = await tempStore();
    const dir = await tempDir();
    const info = await store.create({ title: "fix the build", workspace: relative(process.cwd(), dir) });
    expect(info.title).toBe("fix the build");
    expect(info.workspace).toBe(resolve(dir));
    expect(info.lastSequence).toBe(0);
    expect(info.updatedAt).toBe(info.createdAt);
    expect(await store.get(info.id)).toEqual(info);
    expect(await store.readAll(info.id)).toEqual([]);
  });

  it("uses the id it is given", async () => {
    const { store, root } = await tempStore();
    const info = await store.create({ id: "my-session_1.a" });
    expect(info.id).toBe("my-session_1.a");
    expect((await stat(join(root, "my-session_1.a", "events.jsonl"))).size).toBe(0);
  });

  it("generates ids that sort by creation time", async () => {
    const { store } = await tempStore();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await store.create()).id);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  });
});

describe("get", () => {
  it("is undefined for a session that does not exist", async () => {
    const { store } = await tempStore();
    expect(await store.get("nobody-here")).toBeUndefined();
  });

  it("reports the last sequence and the time of the last event", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    const written = await appendMessages(store, id, 3);
    const info = await store.get(id);
    expect(info?.lastSequence).toBe(3);
    expect(info?.updatedAt).toBe(written[2]!.createdAt);
  });
});

describe("list", () => {
  it("is empty for a root that does not exist yet", async () => {
    const root = join(await tempDir(), "not-yet");
    const { store } = await tempStore({ root });
    expect(await store.list()).toEqual([]);
  });

  it("lists every session, most recently updated first", async () => {
    const { store } = await tempStore();
    const a = await store.create({ id: "a" });
    const b = await store.create({ id: "b" });
    const c = await store.create({ id: "c" });
    await pause(3); // distinct millisecond timestamps, so the order is decided by updatedAt alone
    await store.append(b.id, say("b"));
    await pause(3);
    await store.append(a.id, say("a"));
    const listed = await store.list();
    expect(listed.map((s) => s.id)).toEqual(["a", "b", "c"]);
    expect(listed[0]?.lastSequence).toBe(1);
    expect(listed[2]).toEqual(c);
  });

  it("lists with idPrefix only the sessions whose id starts with it, in the same order", async () => {
    const { store } = await tempStore();
    for (const id of ["proj-a-1", "proj-b-1", "proj-a-2", "proj-a"]) await store.create({ id });
    await pause(3);
    await store.append("proj-a-1", say("newest"));
    expect((await store.list({ idPrefix: "proj-a-" })).map((s) => s.id)).toEqual(["proj-a-1", "proj-a-2"]);
    expect(await store.list({ idPrefix: "nothing-" })).toEqual([]);
    expect((await store.list({ idPrefix: "" })).length).toBe(4);
  });

  it("lists a session whose log cannot be read as unreadable with the error code, instead of hiding it", async () => {
    const { store, root } = await tempStore();
    const good = await store.create({ id: "good" });
    await store.append(good.id, say("fine"));
    const bad = await store.create({ id: "bad", title: "broken" });
    await appendFile(join(root, bad.id, "events.jsonl"), "this is not json\n");
    const listed = await store.list();
    expect(listed.map((s) => s.id).sort()).toEqual(["bad", "good"]);
    const broken = listed.find((s) => s.id === "bad")!;
    expect(broken.title).toBe("broken");
    expect(broken.unreadable?.code).toBe("LOG_CORRUPT");
    expect(listed.find((s) => s.id === "good")!.unreadable).toBeUndefined();
  });
});

describe("append", () => {
  it("returns the stored envelope and numbers events from 1 without gaps", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    const first = await store.append(id, say("hi"));
    expect(first).toEqual({
      v: 1,
      id: expect.stringMatching(/^[0-9A-Z]{26}$/),
      sessionId: id,
      sequence: 1,
      type: "message",
      createdAt: expect.any(String),
      payload: { role: "user", content: "hi" },
    });
    expect(new Date(first.createdAt).toISOString()).toBe(first.createdAt);
    const more = await appendMessages(store, id, 4);
    expect(more.map((e) => e.sequence)).toEqual([2, 3, 4, 5]);
    expect(await store.readAll(id)).toEqual([first, ...more]);
  });

  it("keeps fields a built-in schema does not name (provider extras)", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    const event = await store.append(id, {
      type: "message",
      payload: { role: "assistant", content: "ok", providerMeta: { a: 1 } },
    });
    expect((await store.readAll(id))[0]?.payload).toEqual({ role: "assistant", content: "ok", providerMeta: { a: 1 } });
    expect(event.payload).toEqual({ role: "assistant", content: "ok", providerMeta: { a: 1 } });
  });

  it.each(["fsync", "batch", "none"] as const)(
    "gives concurrent appends distinct sequences in call order (durability %s)",
    async (durability) => {
      const { store } = await tempStore({ durability });
      const { id } = await store.create();
      const written = await Promise.all(Array.from({ length: 40 }, (_, i) => store.append(id, say(`c${i}`))));
      expect(written.map((e) => e.sequence)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      const read = await store.readAll(id);
      expect(read.map((e) => (e.payload as { content: string }).content)).toEqual(
        Array.from({ length: 40 }, (_, i) => `c${i}`),
      );
    },
  );
});

describe("call order", () => {
  it.each(["fsync", "batch", "none"] as const)(
    "is kept by appends, batches and locked work issued without waiting (durability %s)",
    async (durability) => {
      const { store } = await tempStore({ durability });
      const { id } = await store.create();
      const order: string[] = [];
      const calls = [
        store.append(id, say("first")),
        store.appendMany(id, [say("second"), say("third")]),
        store.append(id, say("fourth")),
        store.withLock(id, async (session) => session.append(say("fifth"))),
        store.append(id, say("sixth")),
      ];
      await Promise.all(calls);
      for (const e of await store.readAll(id)) order.push((e.payload as { content: string }).content);
      expect(order).toEqual(["first", "second", "third", "fourth", "fifth", "sixth"]);
    },
  );
});

describe("appendMany", () => {
  it("gives the events contiguous sequences, after what is already there", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await store.append(id, say("before"));
    const many = await store.appendMany(id, [
      say("one"),
      { type: "tool_call", payload: { callId: "c1", name: "read_file", input: { path: "a.ts" } } },
      { type: "tool_result", payload: { callId: "c1", output: "text" } },
    ]);
    expect(many.map((e) => [e.sequence, e.type])).toEqual([
      [2, "message"],
      [3, "tool_call"],
      [4, "tool_result"],
    ]);
    expect((await store.readAll(id)).slice(1)).toEqual(many);
  });

  it("writes nothing for an empty list", async () => {
    const { store, root } = await tempStore();
    const { id } = await store.create();
    expect(await store.appendMany(id, [])).toEqual([]);
    expect(await readFile(join(root, id, "events.jsonl"), "utf8")).toBe("");
  });

  it("is not split by concurrent single appends (group commit)", async () => {
    const { store } = await tempStore({ durability: "batch" });
    const { id } = await store.create();
    const batches = await Promise.all([
      store.append(id, say("x")),
      store.appendMany(id, [say("m1"), say("m2"), say("m3")]),
      store.append(id, say("y")),
    ]);
    const many = batches[1];
    expect(many.map((e) => e.sequence)).toEqual([many[0]!.sequence, many[0]!.sequence + 1, many[0]!.sequence + 2]);
    expect((await store.readAll(id)).map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
  });
});

describe("read", () => {
  it("streams events in order within fromSequence..toSequence, of the given types", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await store.appendMany(id, [
      say("1"),
      { type: "tool_call", payload: { callId: "a", name: "ls", input: {} } },
      { type: "tool_result", payload: { callId: "a", output: [] } },
      say("4"),
      { type: "usage", payload: { inputTokens: 10 } },
      say("6"),
    ]);
    const seqs = async (options: Parameters<typeof store.read>[1]) => {
      const out: number[] = [];
      for await (const e of store.read(id, options)) out.push(e.sequence);
      return out;
    };
    expect(await seqs({})).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await seqs({ fromSequence: 3 })).toEqual([3, 4, 5, 6]);
    expect(await seqs({ toSequence: 3 })).toEqual([1, 2, 3]);
    expect(await seqs({ fromSequence: 2, toSequence: 4 })).toEqual([2, 3, 4]);
    expect(await seqs({ types: ["message"] })).toEqual([1, 4, 6]);
    expect(await seqs({ types: ["message", "usage"], fromSequence: 2, toSequence: 5 })).toEqual([4, 5]);
    expect(await seqs({ fromSequence: 7 })).toEqual([]);
    expect(await seqs({ types: [] })).toEqual([]);
  });

  it("narrows the event type by the types asked for", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await store.append(id, { type: "tool_call", payload: { callId: "a", name: "ls", input: {} } });
    for await (const e of store.read(id, { types: ["tool_call"] })) {
      // Typed as a tool call: this line would not compile if the narrowing were lost.
      const name: string = e.payload.name;
      expect(name).toBe("ls");
    }
  });

  it("closes the log file when the loop is left early", async () => {
    // No lease fd: the store must not keep the log open between operations for this count to be exact.
    const { store, root } = await tempStore({ lockIdleMs: 0 });
    const { id } = await store.create();
    await store.appendMany(
      id,
      Array.from({ length: 50 }, (_, i) => say(`m${i}`)),
    );
    const log = join(root, id, "events.jsonl");
    const openLogs = async () => {
      let n = 0;
      for (const fd of await readdir("/proc/self/fd")) {
        const target = await readlink(`/proc/self/fd/${fd}`).catch(() => "");
        if (target === log) n++;
      }
      return n;
    };
    const before = await openLogs();
    let seen = 0;
    for await (const e of store.read(id)) {
      seen = e.sequence;
      expect(await openLogs()).toBe(before + 1);
      if (seen === 3) break;
    }
    expect(seen).toBe(3);
    expect(await openLogs()).toBe(before);
  });

  it("hands out events in order when next() is called again before the last one settled", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    // Over several read chunks, so the calls race across refills too.
    await store.appendMany(
      id,
      Array.from({ length: 600 }, (_, i) => say(`m${i} ${"x".repeat(300)}`)),
    );
    const stream = store.read(id);
    const results = await Promise.all(Array.from({ length: 602 }, () => stream.next()));
    expect(results.slice(0, 600).map((r) => (r.done ? "done" : r.value.sequence))).toEqual(
      Array.from({ length: 600 }, (_, i) => i + 1),
    );
    expect(results.slice(600).every((r) => r.done)).toBe(true);
  });

  it("reads a log far longer than one read chunk, lines spanning chunk edges included", async () => {
    const { store } = await tempStore({ durability: "none" });
    const { id } = await store.create();
    // ~300-byte lines against 64 KB chunks, plus a few lines larger than a chunk.
    const inputs = Array.from({ length: 3000 }, (_, i) =>
      say(i % 997 === 0 ? "é".repeat(70_000) : `line ${i} ${"x".repeat(200)}`),
    );
    for (let i = 0; i < inputs.length; i += 500) await store.appendMany(id, inputs.slice(i, i + 500));
    let expected = 1;
    for await (const e of store.read(id)) {
      expect(e.sequence).toBe(expected);
      expect(e.payload).toEqual(inputs[expected - 1]!.payload);
      expected++;
    }
    expect(expected).toBe(3001);
  });
});

describe("readAll", () => {
  it("returns what read() yields, options included", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await appendMessages(store, id, 5);
    const streamed: StoredEvent[] = [];
    for await (const e of store.read(id, { fromSequence: 2, toSequence: 4 })) streamed.push(e);
    expect(await store.readAll(id, { fromSequence: 2, toSequence: 4 })).toEqual(streamed);
    expect((await store.readAll(id)).map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
  });
});

describe("salvage", () => {
  it("returns every readable event and reports each corrupt line with its number", async () => {
    // lockIdleMs 0: the damage is made while no lease is held (a write under a held one is refused).
    const { store, root } = await tempStore({ lockIdleMs: 0 });
    const { id } = await store.create();
    await appendMessages(store, id, 2);
    await store.append(id, say("after the damage"));
    // A damaged line between the second and third events (one at the end would stop the appends: LOG_CORRUPT).
    const log = join(root, id, "events.jsonl");
    const lines = (await readFile(log, "utf8")).split("\n");
    await writeFile(log, [...lines.slice(0, 2), "{not json", ...lines.slice(2)].join("\n"));
    const { events, corrupt } = await store.salvage(id);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3]);
    expect(corrupt).toEqual([{ line: 3, reason: expect.stringContaining("not valid JSON"), text: "{not json" }]);
  });

  it("reports nothing corrupt for a clean log", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await appendMessages(store, id, 3);
    expect(await store.salvage(id)).toEqual({ events: await store.readAll(id), corrupt: [] });
  });
});

describe("fold", () => {
  it("folds the events in sequence order into a state", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await appendMessages(store, id, 4);
    const order = await store.fold(id, (seen: number[], e) => [...seen, e.sequence], []);
    expect(order).toEqual([1, 2, 3, 4]);
    const words = await store.fold(
      id,
      (text: string, e) => text + (e.payload as { content: string }).content.slice(-1),
      "",
      { fromSequence: 3 },
    );
    expect(words).toBe("34");
  });
});

describe("conversation", () => {
  it("rebuilds messages with their tool calls and results, after a restart", async () => {
    const root = await tempDir();
    {
      await using first = openStore({ root });
      await first.create({ id: "chat" });
      await first.appendMany("chat", [
        { type: "message", payload: { role: "user", content: "list files" } },
        { type: "message", payload: { role: "assistant", content: "looking" } },
        { type: "tool_call", payload: { callId: "t1", name: "ls", input: { dir: "." } } },
        { type: "tool_call", payload: { callId: "t2", name: "cat", input: { file: "a" } } },
        { type: "tool_result", payload: { callId: "t1", output: ["a", "b"] } },
        { type: "usage", payload: { inputTokens: 5, outputTokens: 7 } },
        { type: "tool_result", payload: { callId: "t2", output: "boom", isError: true } },
      ]);
    }
    const { store } = await tempStore({ root });
    const conversation = await store.conversation("chat");
    expect(conversation).toEqual({
      lastSequence: 7,
      messages: [
        { role: "user", content: "list files", sequence: 1, toolCalls: [] },
        {
          role: "assistant",
          content: "looking",
          sequence: 2,
          toolCalls: [
            {
              callId: "t1",
              name: "ls",
              input: { dir: "." },
              sequence: 3,
              result: { output: ["a", "b"], isError: false, sequence: 5 },
            },
            {
              callId: "t2",
              name: "cat",
              input: { file: "a" },
              sequence: 4,
              result: { output: "boom", isError: true, sequence: 7 },
            },
          ],
        },
      ],
    });
  });

  it("replaces what a compaction summarised with its summary; leaves an unanswered call without result", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await store.appendMany(id, [
      say("old 1"),
      say("old 2"),
      say("kept"),
      { type: "compaction", payload: { summary: "we talked", throughSequence: 2 } },
      { type: "tool_call", payload: { callId: "t", name: "edit", input: null } },
    ]);
    const { messages } = await store.conversation(id);
    expect(messages.map((m) => [m.role, m.content, m.sequence])).toEqual([
      ["system", "we talked", 4],
      ["user", "kept", 3],
      ["assistant", "", 5],
    ]);
    expect(messages[2]?.toolCalls).toEqual([{ callId: "t", name: "edit", input: null, sequence: 5 }]);
  });
});

describe("fork", () => {
  it("copies the parent's events through atSequence, then a session_fork naming the parent", async () => {
    const { store } = await tempStore();
    const parent = await store.create({ title: "parent", workspace: tmpdir() });
    const written = await appendMessages(store, parent.id, 5);
    const fork = await store.fork(parent.id, { atSequence: 3, id: "the-fork" });
    expect(fork).toMatchObject({
      id: "the-fork",
      title: "parent",
      workspace: tmpdir(),
      parent: { id: parent.id, atSequence: 3 },
      lastSequence: 4,
    });
    const events = await store.readAll("the-fork");
    expect(events.slice(0, 3)).toEqual(written.slice(0, 3).map((e) => ({ ...e, sessionId: "the-fork" })));
    expect(events[3]).toMatchObject({
      sequence: 4,
      sessionId: "the-fork",
      type: "session_fork",
      payload: { parentId: parent.id, atSequence: 3 },
    });
    expect(events).toHaveLength(4);
    expect(await store.get("the-fork")).toEqual(fork);
    // The parent is untouched, and both go on independently.
    expect(await store.readAll(parent.id)).toEqual(written);
    expect((await store.append("the-fork", say("fork side"))).sequence).toBe(5);
    expect((await store.append(parent.id, say("parent side"))).sequence).toBe(6);
  });

  it("forks the whole log by default, under a new title if given", async () => {
    const { store } = await tempStore();
    const parent = await store.create({ title: "p" });
    await appendMessages(store, parent.id, 2);
    const fork = await store.fork(parent.id, { title: "try another way" });
    expect(fork.title).toBe("try another way");
    expect(fork.parent).toEqual({ id: parent.id, atSequence: 2 });
    expect((await store.readAll(fork.id)).map((e) => e.type)).toEqual(["message", "message", "session_fork"]);
  });

  it("forks at 0 into a session holding only the fork event", async () => {
    const { store } = await tempStore();
    const parent = await store.create();
    await appendMessages(store, parent.id, 2);
    const fork = await store.fork(parent.id, { atSequence: 0 });
    expect((await store.readAll(fork.id)).map((e) => [e.sequence, e.type])).toEqual([[1, "session_fork"]]);
  });

  it("brings the blobs its copied checkpoints refer to, and only those", async () => {
    const { store } = await tempStore();
    const parent = await store.create({ workspace: tmpdir() });
    const blob = (text: string) => ({
      bytes: Buffer.from(text),
      hash: createHash("sha256").update(text).digest("hex"),
    });
    const early = blob("before the first edit");
    const late = blob("before the second edit");
    await lockedAccess(store).withLockedSession(parent.id, async (locked) => {
      await locked.writeBlob(early.hash, early.bytes);
      await locked.writeBlob(late.hash, late.bytes);
    });
    const checkpoint = (b: { hash: string; bytes: Buffer }) => ({
      type: "session_checkpoint" as const,
      payload: {
        tool: "edit",
        workspace: tmpdir(),
        files: [{ path: "a.ts", kind: "blob" as const, blob: b.hash, bytes: b.bytes.length, mode: 0o644 }],
      },
    });
    await store.append(parent.id, checkpoint(early));
    await store.append(parent.id, say("edited"));
    await store.append(parent.id, checkpoint(late));
    const fork = await store.fork(parent.id, { atSequence: 2 });
    expect(await store.backend.listBlobs(fork.id)).toEqual([early.hash]);
    expect(await store.backend.readBlob(fork.id, early.hash)).toEqual(early.bytes);
    expect((await store.backend.listBlobs(parent.id)).sort()).toEqual([early.hash, late.hash].sort());
  });
});

describe("delete", () => {
  it("removes the session and its folder; the id can be used again", async () => {
    const { store, root } = await tempStore();
    const { id } = await store.create({ id: "gone" });
    await appendMessages(store, id, 3);
    expect(await store.delete(id)).toBe(true);
    expect(await store.get(id)).toBeUndefined();
    expect(await store.list()).toEqual([]);
    expect(await readdir(root)).toEqual([]);
    await store.create({ id: "gone" });
    expect((await store.append("gone", say("fresh"))).sequence).toBe(1);
  });

  it("returns false for a session that does not exist", async () => {
    const { store } = await tempStore();
    expect(await store.delete("never-was")).toBe(false);
  });
});

describe("close and Symbol.asyncDispose", () => {
  it("releases the session lock so another store can write at once", async () => {
    const root = await tempDir();
    const { store: holder } = await tempStore({ root, lockIdleMs: 60_000 });
    const { store: other } = await tempStore({ root, lockWaitMs: 300 });
    const { id } = await holder.create();
    await holder.append(id, say("holder keeps its lease"));
    await expect(other.append(id, say("too early"))).rejects.toSatisfy((e) => isAgentTapeError(e, "LOCKED"));
    await holder.close();
    expect((await other.append(id, say("after close"))).sequence).toBe(2);
  });

  it("waits for writes already queued before closing", async () => {
    const { store, root } = await tempStore({ durability: "batch" });
    const { id } = await store.create();
    const queued = Array.from({ length: 25 }, (_, i) => store.append(id, say(`q${i}`)));
    await store.close();
    expect((await Promise.all(queued)).map((e) => e.sequence)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    const lines = (await readFile(join(root, id, "events.jsonl"), "utf8")).trimEnd().split("\n");
    expect(lines).toHaveLength(25);
  });

  it("is idempotent", async () => {
    const { store } = await tempStore();
    await store.close();
    await expect(store.close()).resolves.toBeUndefined();
  });

  it("closes the store at the end of an `await using` block", async () => {
    const root = await tempDir();
    let escaped: SessionStore | undefined;
    {
      await using store = openStore({ root, lockIdleMs: 60_000 });
      escaped = store;
      const { id } = await store.create({ id: "scoped" });
      await store.append(id, say("inside"));
    }
    await expect(escaped.get("scoped")).rejects.toSatisfy((e) => isAgentTapeError(e, "STORE_CLOSED"));
    // And its lease is gone: a fresh store gets the lock without waiting.
    const { store: next } = await tempStore({ root, lockWaitMs: 300 });
    expect((await next.append("scoped", say("next"))).sequence).toBe(2);
  });
});

describe("withLock", () => {
  it("hands out the held session, whose appends the store numbers after the log", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await appendMessages(store, id, 2);
    const written = await store.withLock(id, async (session) => {
      expect(session.sessionId).toBe(id);
      expect(session.lastSequence).toBe(2);
      const one = await session.append(say("under the lock"));
      const more = await session.appendMany([say("and two"), say("more")]);
      expect(session.lastSequence).toBe(5);
      return [one, ...more];
    });
    expect(written.map((e) => e.sequence)).toEqual([3, 4, 5]);
    expect((await store.readAll(id)).slice(-3)).toEqual(written);
  });

  it("validates what user code appends under the lock, as append does: nothing invalid is written", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await appendMessages(store, id, 1);
    const refused = await store
      .withLock(id, async (session) => {
        // A raw envelope with a made-up sequence, and a payload its schema rejects, all in one batch.
        const forged = { v: 1, id: "x", sessionId: id, sequence: 99, type: "message", createdAt: "", payload: {} };
        await session.appendMany([say("fine"), forged as never]);
      })
      .catch((e: unknown) => e);
    expect(isAgentTapeError(refused, "INVALID_EVENT")).toBe(true);
    const unknownType = await store
      .withLock(id, (session) => session.append({ type: "no_such_type", payload: {} } as never))
      .catch((e: unknown) => e);
    expect(isAgentTapeError(unknownType, "INVALID_EVENT")).toBe(true);
    expect((await store.readAll(id)).map((e) => e.sequence)).toEqual([1]);
  });

  it("gives user code no way to cut the log, delete blobs or write side records", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await appendMessages(store, id, 3);
    const reachable = await store.withLock(id, async (session) => {
      const handle = session as unknown as Record<string, unknown>;
      const names = ["truncateAfter", "deleteBlob", "writeBlob", "writeRecord", "deleteRecord", "release"];
      return names.filter((name) => name in handle || typeof handle[name] === "function");
    });
    expect(reachable).toEqual([]);
    expect((await store.readAll(id)).map((e) => e.sequence)).toEqual([1, 2, 3]);
  });

  it("refuses an append through a held session kept past its withLock: the log stays whole", async () => {
    const { store } = await tempStore({ lockIdleMs: 60_000 });
    const { id } = await store.create();
    let kept: HeldSession | undefined;
    await store.withLock(id, async (session) => {
      kept = session;
      await session.append(say("inside"));
    });
    const late = await kept!.append(say("after withLock returned")).catch((e: unknown) => e);
    expect(isAgentTapeError(late, "INVALID_ARGUMENT"), String(late)).toBe(true);
    // Racing the store's own appends, a kept handle must not write either: it once took the same numbers.
    const raced = await Promise.allSettled([kept!.appendMany([say("x")]), store.append(id, say("y"))]);
    expect(raced.map((r) => r.status)).toEqual(["rejected", "fulfilled"]);
    expect((await store.readAll(id)).map((e) => [e.sequence, (e.payload as { content: string }).content])).toEqual([
      [1, "inside"],
      [2, "y"],
    ]);
  });

  it("waits for an append fn started and did not await before the lock goes to the next caller", async () => {
    const { store } = await tempStore({ lockIdleMs: 60_000 });
    const { id } = await store.create();
    let unawaited: Promise<unknown> | undefined;
    await store.withLock(id, async (session) => {
      unawaited = session.appendMany(Array.from({ length: 50 }, (_, i) => say(`left running ${i}`)));
    });
    const next = await store.append(id, say("next caller"));
    expect((await unawaited) as StoredEvent[]).toHaveLength(50);
    expect(next.sequence).toBe(51);
    expect((await store.readAll(id)).map((e) => e.sequence)).toEqual(Array.from({ length: 51 }, (_, i) => i + 1));
  });

  it("refuses a store call for the same session from inside, instead of waiting for itself", async () => {
    for (const durability of ["fsync", "batch"] as const) {
      const { store } = await tempStore({ durability });
      const { id } = await store.create();
      const other = await store.create();
      const inner = await store.withLock(id, async () => {
        const refused = await store.append(id, say("nested")).then(
          () => undefined,
          (e: unknown) => e,
        );
        const nestedLock = await store.withLock(id, async () => "ran").catch((e: unknown) => e);
        // Another session's lock is a different lock: allowed.
        const elsewhere = await store.append(other.id, say("other session"));
        return { refused, nestedLock, elsewhere };
      });
      expect(isAgentTapeError(inner.refused, "INVALID_ARGUMENT")).toBe(true);
      expect(isAgentTapeError(inner.nestedLock, "INVALID_ARGUMENT")).toBe(true);
      expect(inner.elsewhere.sequence).toBe(1);
      expect(await store.readAll(id)).toEqual([]);
      // The refusal left nothing stuck.
      expect((await store.append(id, say("afterwards"))).sequence).toBe(1);
    }
  });
});

describe("custom event types", () => {
  const events = {
    plan_step: z.object({ step: z.number().int(), done: z.boolean().default(false) }),
    note: z.string().transform((s) => s.trim()),
  };

  it("validates, stores the schema's output, and reads it back", async () => {
    const { store } = await tempStore({ events });
    const { id } = await store.create();
    const step = await store.append(id, { type: "plan_step", payload: { step: 1 } });
    expect(step.payload).toEqual({ step: 1, done: false });
    const note = await store.append(id, { type: "note", payload: "  remember this  " });
    expect(note.payload).toBe("remember this");
    const read = await store.readAll(id, { types: ["plan_step", "note"] });
    expect(read.map((e) => e.payload)).toEqual([{ step: 1, done: false }, "remember this"]);
    await expect(store.append(id, { type: "plan_step", payload: { step: 1.5 } })).rejects.toSatisfy((e) =>
      isAgentTapeError(e, "INVALID_EVENT"),
    );
    // @ts-expect-error: append is typed by the registered schemas
    await expect(store.append(id, { type: "plan_step", payload: { stage: 1 } })).rejects.toSatisfy((e) =>
      isAgentTapeError(e, "INVALID_EVENT"),
    );
  });

  it("cannot take a built-in type's name", async () => {
    const root = await tempDir();
    expect(() => openStore({ root, events: { message: z.object({}) } })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});

describe("event types found on disk that this store does not know", () => {
  it("are read back as they are, and appending goes on after them", async () => {
    const root = await tempDir();
    const { store } = await tempStore({ root });
    const { id } = await store.create();
    await store.append(id, say("known"));
    // A newer version of the app, with a type this one has never heard of, writes to the same session.
    const { store: newer } = await tempStore({
      root,
      events: { from_a_newer_version: z.object({ whatever: z.array(z.unknown()) }) },
    });
    const future = await newer.append(id, {
      type: "from_a_newer_version",
      payload: { whatever: [1, { nested: true }] },
    });
    await newer.close();
    const events = await store.readAll(id);
    expect(events[1]).toEqual(future);
    expect(await store.readAll(id, { types: ["from_a_newer_version" as "message"] })).toEqual([future]);
    expect((await store.append(id, say("after"))).sequence).toBe(3);
    expect((await store.readAll(id)).map((e) => e.type)).toEqual(["message", "from_a_newer_version", "message"]);
  });

  it("are kept with envelope fields from a newer format version", async () => {
    const { store, root } = await tempStore();
    const { id } = await store.create();
    const future = {
      v: 2,
      id: "01FUTURE00000000000000000X",
      sessionId: id,
      sequence: 1,
      type: "from_a_newer_version",
      createdAt: new Date().toISOString(),
      payload: { whatever: true },
      traceId: "abc",
    };
    await appendFile(join(root, id, "events.jsonl"), JSON.stringify(future) + "\n");
    expect(await store.readAll(id)).toEqual([future]);
    expect((await store.append(id, say("after"))).sequence).toBe(2);
  });
});
