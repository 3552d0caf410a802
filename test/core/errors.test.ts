import { access, appendFile, cp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, expectTypeOf, it } from "vitest";
import { InvalidSessionIdError, LockedError, RewindConflictError } from "../../src/core/errors.js";
import { isAgentTapeError, type AgentTapeErrorByCode, type AgentTapeErrorCode } from "../../src/index.js";
import { expectRejection } from "../helpers/expect-rejection.js";
import { test as own, tempDir, tempStore } from "../helpers/fixture.js";

const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The error `run` failed with; fails the test if it succeeded. */
async function failure(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail, and it succeeded");
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

async function drain(iterable: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of iterable);
}

describe("SESSION_NOT_FOUND", () => {
  it.each(["fsync", "batch"] as const)(
    "is what every operation on a missing session gets, and nothing is created (durability %s)",
    async (durability) => {
      const { store, root } = await tempStore({ durability });
      await store.create({ id: "exists" });
      const calls: [string, () => Promise<unknown>][] = [
        ["append", () => store.append("missing", say("x"))],
        ["appendMany", () => store.appendMany("missing", [say("x"), say("y")])],
        ["read", () => drain(store.read("missing"))],
        ["readAll", () => store.readAll("missing")],
        ["salvage", () => store.salvage("missing")],
        ["fold", () => store.fold("missing", (n: number) => n + 1, 0)],
        ["conversation", () => store.conversation("missing")],
        ["fork", () => store.fork("missing", { id: "child" })],
        ["withLock", () => store.withLock("missing", async () => "ran")],
      ];
      for (const [name, call] of calls) {
        const error = await expectRejection(call, "SESSION_NOT_FOUND").catch((e: Error) => {
          throw new Error(`${name}: ${e.message}`);
        });
        expect(error.sessionId, name).toBe("missing");
      }
      expect(await readdir(root)).toEqual(["exists"]);
      expect(await store.get("missing")).toBeUndefined();
    },
  );

  it("is what an append waiting for the lock gets when the session is deleted meanwhile", async () => {
    const root = await tempDir();
    const { store: holder } = await tempStore({ root, lockIdleMs: 60_000 });
    const { store: waiter } = await tempStore({ root, lockWaitMs: 10_000 });
    await holder.create({ id: "doomed" });
    await holder.append("doomed", say("holder has the lease"));
    const waiting = failure(() => waiter.append("doomed", say("waiting")));
    await pause(100); // let it start polling for the lock
    expect(await holder.delete("doomed")).toBe(true);
    const error = await waiting;
    expect(isAgentTapeError(error, "SESSION_NOT_FOUND"), String(error)).toBe(true);
    expect(await readdir(root)).toEqual([]);
  });
});

describe("SESSION_EXISTS", () => {
  it("refuses create and fork onto a taken id and leaves that session as it was", async () => {
    const { store, root } = await tempStore();
    await store.create({ id: "taken", title: "original" });
    await store.append("taken", say("keep me"));
    const other = await store.create({ id: "other" });
    await store.append(other.id, say("parent"));
    const before = await readFile(join(root, "taken", "events.jsonl"), "utf8");

    const created = await expectRejection(() => store.create({ id: "taken", title: "impostor" }), "SESSION_EXISTS");
    expect(created.sessionId).toBe("taken");
    await expectRejection(() => store.fork(other.id, { id: "taken" }), "SESSION_EXISTS");

    expect(await readFile(join(root, "taken", "events.jsonl"), "utf8")).toBe(before);
    expect((await store.get("taken"))?.title).toBe("original");
    // No staging folder is left behind.
    expect((await readdir(root)).sort()).toEqual(["other", "taken"]);
  });
});

describe("INVALID_SESSION_ID", () => {
  const badIds = [
    "a/b",
    "../escape",
    "..",
    ".",
    ".hidden",
    "",
    "x".repeat(129),
    "a\\b",
    "with space",
    "nul\0byte",
    "/abs",
  ];

  it.each(badIds.map((id) => [JSON.stringify(id).slice(0, 24), id]))(
    "refuses %s before touching anything",
    async (_label, id) => {
      // A root that does not exist yet: any write at all would create it.
      const root = join(await tempDir(), "root");
      const { store } = await tempStore({ root });
      const calls: [string, () => Promise<unknown>][] = [
        ["create", () => store.create({ id })],
        ["get", () => store.get(id)],
        ["append", () => store.append(id, say("x"))],
        ["appendMany", () => store.appendMany(id, [say("x")])],
        ["read", () => drain(store.read(id))],
        ["readAll", () => store.readAll(id)],
        ["salvage", () => store.salvage(id)],
        ["fork from", () => store.fork(id)],
        ["fork to", () => store.fork("fine", { id })],
        ["delete", () => store.delete(id)],
        ["withLock", () => store.withLock(id, async () => "ran")],
      ];
      for (const [name, call] of calls) {
        const error = await failure(call);
        if (!isAgentTapeError(error, "INVALID_SESSION_ID")) throw new Error(`${name}: ${String(error)}`);
        expect(error.sessionId, name).toBe(id);
      }
      expect(await exists(root)).toBe(false);
    },
  );

  it("accepts 128 safe characters", async () => {
    const { store } = await tempStore();
    const id = "A-z_0.9" + "x".repeat(121);
    expect(id).toHaveLength(128);
    expect((await store.create({ id })).id).toBe(id);
  });
});

describe("INVALID_EVENT", () => {
  it.each(["fsync", "batch", "none"] as const)(
    "refuses a bad payload, an unknown type or a shapeless event and writes nothing (durability %s)",
    async (durability) => {
      const { store, root } = await tempStore({ durability });
      const { id } = await store.create();
      await store.append(id, say("good"));
      const log = join(root, id, "events.jsonl");
      const before = await readFile(log);

      const badPayload = await expectRejection(
        () => store.append(id, { type: "message", payload: { role: "robot", content: "x" } } as never),
        "INVALID_EVENT",
      );
      expect(badPayload.issues.map((i) => i.path)).toEqual(["role"]);
      expect(badPayload.message).toContain('Invalid "message" payload');

      const unknown = await expectRejection(
        () => store.append(id, { type: "not_registered", payload: {} } as never),
        "INVALID_EVENT",
      );
      expect(unknown.message).toContain('Unknown event type "not_registered"');

      await expectRejection(() => store.append(id, null as never), "INVALID_EVENT");
      await expectRejection(() => store.append(id, { payload: {} } as never), "INVALID_EVENT");

      // One bad event spoils the whole batch: all or nothing.
      const inBatch = await expectRejection(
        () =>
          store.appendMany(id, [
            say("fine"),
            { type: "tool_call", payload: { callId: "", name: "ls", input: 1 } },
            say("fine too"),
          ]),
        "INVALID_EVENT",
      );
      expect(inBatch.message).toContain("(event 1)");

      expect(await readFile(log)).toEqual(before);
      // No sequence was used up by the refused events.
      expect((await store.append(id, say("next"))).sequence).toBe(2);
    },
  );

  it("is checked before the session is looked up, so it writes nothing even for a missing session", async () => {
    const { store, root } = await tempStore();
    await expectRejection(() => store.append("missing", { type: "message", payload: {} } as never), "INVALID_EVENT");
    expect(await readdir(root)).toEqual([]);
  });
});

describe("LOG_CORRUPT", () => {
  async function sessionWithCorruptLine(lineText: string) {
    const { store, root } = await tempStore({ lockIdleMs: 0 });
    const { id } = await store.create();
    await store.appendMany(id, [say("1"), say("2")]);
    const log = join(root, id, "events.jsonl");
    await appendFile(log, lineText + "\n");
    return { store, root, id, log };
  }

  it("names the file and line of a corrupt line in the middle of the log", async () => {
    const { store, root } = await tempStore({ lockIdleMs: 0 });
    const { id } = await store.create();
    await store.appendMany(id, [say("1"), say("2"), say("3"), say("4")]);
    const log = join(root, id, "events.jsonl");
    const lines = (await readFile(log, "utf8")).split("\n");
    lines[2] = '{"v":1,"half an event';
    await writeFile(log, lines.join("\n"));
    const seen: number[] = [];
    const error = await expectRejection(async () => {
      for await (const e of store.read(id)) seen.push(e.sequence);
    }, "LOG_CORRUPT");
    expect(error.name).toBe("LogCorruptError");
    expect(error.file).toBe(log);
    expect(error.line).toBe(3);
    expect(error.message).toContain(`${log}:3:`);
    // Never a silent drop: the events before the damage came out, nothing after it.
    expect(seen).toEqual([1, 2]);
    await expectRejection(() => store.readAll(id), "LOG_CORRUPT");
    await expectRejection(() => store.conversation(id), "LOG_CORRUPT");
  });

  it("treats a well-formed line whose sequence goes backwards as corrupt", async () => {
    const { store, id, log } = await sessionWithCorruptLine("");
    const lines = (await readFile(log, "utf8")).split("\n").filter(Boolean);
    // Put a copy of event 1 back at the end: a duplicated sequence.
    await writeFile(log, [...lines, lines[0]!, ""].join("\n"));
    // Appending after it would take numbers already in the log: refused, naming the line.
    const refused = await expectRejection(() => store.append(id, say("after")), "LOG_CORRUPT");
    expect(refused.line).toBe(3);
    const error = await expectRejection(() => store.readAll(id), "LOG_CORRUPT");
    expect(error.line).toBe(3);
  });

  it("refuses to append after a corrupt last line, naming it, and writes nothing", async () => {
    const { store, id, log } = await sessionWithCorruptLine('{"v":1,"sequence":"three"}');
    const before = await readFile(log);
    const error = await expectRejection(() => store.append(id, say("after")), "LOG_CORRUPT");
    expect(error.file).toBe(log);
    expect(error.line).toBe(3);
    expect(await readFile(log)).toEqual(before);
  });

  it("names the line when get() finds the last line corrupt", async () => {
    const { store, id, log } = await sessionWithCorruptLine("[]");
    const error = await expectRejection(() => store.get(id), "LOG_CORRUPT");
    expect(error.file).toBe(log);
    expect(error.line).toBe(3);
  });
});

// LOCKED, and LOCK_COMPROMISED between processes: test/session/lock-errors.process.test.ts.
// The two tests wait out the lock's check (a timer in proper-lockfile, at least 1000 ms: no event to wait for
// instead), so they wait side by side, each with the fixtures of its own context.
describe.concurrent("LOCK_COMPROMISED", () => {
  // proper-lockfile checks its lock every max(1000, lockStaleMs / 4) ms; wait out more than one check.
  const detection = 2_500;

  own(
    "is what the next call gets after the lock folder is removed under a holder; the one after works",
    async ({ tempDir, openStore }) => {
      const root = await tempDir();
      const store = openStore({ root, lockStaleMs: 2000, lockIdleMs: 60_000 });
      const { id } = await store.create();
      await store.append(id, say("1"));
      await rm(join(root, id, "events.jsonl.lock"), { recursive: true });
      await pause(detection);

      const error = await expectRejection(() => store.append(id, say("lost")), "LOCK_COMPROMISED");
      expect(error.sessionId).toBe(id);
      expect((await store.append(id, say("2"))).sequence).toBe(2);
      expect((await store.readAll(id)).map((e) => (e.payload as { content: string }).content)).toEqual(["1", "2"]);
    },
  );

  own(
    "is still reported when the loss was noticed while idle and the idle lease has since run out",
    async ({ tempDir, openStore }) => {
      // The lock is checked 1000 ms after it is taken; the idle release comes at 1500 ms, after that check.
      const root = await tempDir();
      const store = openStore({ root, lockStaleMs: 2000, lockIdleMs: 1_500 });
      const { id } = await store.create();
      await store.append(id, say("1"));
      await rm(join(root, id, "events.jsonl.lock"), { recursive: true });
      await pause(detection);

      await expectRejection(() => store.append(id, say("lost")), "LOCK_COMPROMISED");
      expect((await store.append(id, say("2"))).sequence).toBe(2);
    },
  );
});

describe("STORE_CLOSED", () => {
  it("is what every call on a closed store gets", async () => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await store.append(id, say("x"));
    await store.close();
    const calls: [string, () => Promise<unknown>][] = [
      ["create", () => store.create()],
      ["get", () => store.get(id)],
      ["list", () => store.list()],
      ["append", () => store.append(id, say("x"))],
      ["appendMany", () => store.appendMany(id, [say("x")])],
      ["read", () => drain(store.read(id))],
      ["readAll", () => store.readAll(id)],
      ["salvage", () => store.salvage(id)],
      ["fold", () => store.fold(id, (n: number) => n, 0)],
      ["conversation", () => store.conversation(id)],
      ["fork", () => store.fork(id)],
      ["delete", () => store.delete(id)],
      ["withLock", () => store.withLock(id, async () => "ran")],
    ];
    for (const [name, call] of calls) {
      const error = await failure(call);
      expect(isAgentTapeError(error, "STORE_CLOSED"), `${name}: ${String(error)}`).toBe(true);
    }
  });
});

describe("SEQUENCE_OUT_OF_RANGE", () => {
  it.each([6, -1, 1.5, Number.NaN])("refuses a fork at %s and creates nothing", async (atSequence) => {
    const { store } = await tempStore();
    const { id } = await store.create();
    await store.appendMany(id, [say("1"), say("2"), say("3"), say("4"), say("5")]);
    const error = await expectRejection(() => store.fork(id, { atSequence, id: "fork" }), "SEQUENCE_OUT_OF_RANGE");
    expect(error).toMatchObject({ sessionId: id, lastSequence: 5 });
    expect(error.sequence).toBe(atSequence);
    expect((await store.list()).map((s) => s.id)).toEqual([id]);
    expect(await store.readAll(id)).toHaveLength(5);
  });
});

describe("isAgentTapeError", () => {
  it("recognises errors from a second copy of the package, where instanceof fails", async () => {
    // A duplicated package copy: the error modules copied into another folder, loaded as modules of their own.
    const folder = await tempDir("agent-tape-second-copy-");
    const source = fileURLToPath(new URL("../../src/core/", import.meta.url));
    await cp(join(source, "errors.ts"), join(folder, "errors.ts"));
    await cp(join(source, "errors"), join(folder, "errors"), { recursive: true });
    const copyPath = pathToFileURL(join(folder, "errors.ts")).href;
    const copy = (await import(/* @vite-ignore */ copyPath)) as typeof import("../../src/core/errors.js");
    const foreign = new copy.SessionNotFoundError("s1");
    const { AgentTapeError } = await import("../../src/core/errors.js");
    expect(foreign instanceof AgentTapeError).toBe(false);
    expect(isAgentTapeError(foreign)).toBe(true);
    expect(isAgentTapeError(foreign, "SESSION_NOT_FOUND")).toBe(true);
    expect(isAgentTapeError(foreign, "LOCKED")).toBe(false);
    expect(copy.isAgentTapeError(new InvalidSessionIdError("../x"), "INVALID_SESSION_ID")).toBe(true);
  });

  it("narrows to the class of the code it is given: that class's own fields without instanceof or a cast", () => {
    const conflict = {
      path: "notes.md",
      change: "modified",
      expected: { path: "notes.md", kind: "file", sha256: "a".repeat(64), mode: 0o644 },
      actual: { path: "notes.md", kind: "absent" },
      resolution: "refuse",
    } as const;
    const caught: unknown = new RewindConflictError("s1", [conflict]);
    if (!isAgentTapeError(caught, "REWIND_CONFLICT")) throw new Error(`expected REWIND_CONFLICT, got ${caught}`);
    expectTypeOf(caught).toEqualTypeOf<RewindConflictError>();
    expect(caught.conflicts.map((c) => c.path)).toEqual(["notes.md"]);
    expect(isAgentTapeError(caught, "LOCKED")).toBe(false);
  });

  it("without a code narrows to the union of the classes, which a switch on code narrows further", () => {
    const caught: unknown = new LockedError("s1", 42);
    if (!isAgentTapeError(caught)) throw new Error(`expected an agent-tape error, got ${caught}`);
    expectTypeOf(caught).toEqualTypeOf<AgentTapeErrorByCode[AgentTapeErrorCode]>();
    let waited: number | undefined;
    switch (caught.code) {
      case "LOCKED":
        waited = caught.waitedMs;
        break;
      case "REWIND_FAILED":
        expect.unreachable(`rolledBack ${caught.rolledBack}`);
    }
    expect(waited).toBe(42);
  });

  it("rejects look-alikes that only carry a code", () => {
    expect(isAgentTapeError({ code: "LOCKED" }, "LOCKED")).toBe(false);
    expect(isAgentTapeError(Object.assign(new Error("x"), { code: "LOCKED" }))).toBe(false);
    expect(isAgentTapeError(null)).toBe(false);
    expect(isAgentTapeError("LOCKED")).toBe(false);
  });
});
