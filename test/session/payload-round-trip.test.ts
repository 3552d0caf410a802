import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { isAgentTapeError } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// What append returns is what read gives back, and a payload JSON would change
// (a function, NaN, a Map, a BigInt, a cycle) is refused naming where, never stored altered.

const events = { note: z.unknown() };

async function openSession() {
  const root = await tempDir();
  const store = openStore({ root, events });
  const { id } = await store.create();
  return { store, root, id };
}

/** [1, <hole>]: index 1 was never set. */
function withHoleAt1(): number[] {
  const list = new Array<number>(2);
  list[0] = 1;
  return list;
}

function toolCall(input: unknown) {
  return { type: "tool_call" as const, payload: { callId: "c1", name: "edit", input } };
}

/** The INVALID_EVENT an append fails with, or a failure of the test if it succeeds or fails otherwise. */
async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => expect.unreachable("the append was accepted"),
    (e: unknown) => e,
  );
  if (!isAgentTapeError(error, "INVALID_EVENT")) throw error;
  return error;
}

describe("a payload JSON cannot carry", () => {
  const cases: [string, unknown, string][] = [
    ["a function", { size: () => 3 }, "payload.input.size"],
    ["NaN", { size: Number.NaN }, "payload.input.size"],
    ["Infinity", { size: Number.POSITIVE_INFINITY }, "payload.input.size"],
    ["a Map", { size: new Map([["a", 1]]) }, "payload.input.size"],
    ["a Set", { size: new Set([1]) }, "payload.input.size"],
    ["a Date", { size: new Date(0) }, "payload.input.size"],
    ["a class instance", { size: new (class Box {})() }, "payload.input.size"],
    ["a BigInt", { size: 10n }, "payload.input.size"],
    ["a symbol", { size: Symbol("s") }, "payload.input.size"],
    ["undefined in an array", { size: [1, undefined] }, "payload.input.size.1"],
    ["a hole in an array", { size: withHoleAt1() }, "payload.input.size.1"],
    ["a nested function", { deep: { list: [{ fn() {} }] } }, "payload.input.deep.list.0.fn"],
  ];
  for (const [what, input, path] of cases) {
    it(`is refused as INVALID_EVENT naming its path: ${what}`, async () => {
      const { store, root, id } = await openSession();
      const error = await refusal(store.append(id, toolCall(input)));
      expect(error.message).toContain(path);
      expect((error as unknown as { issues: { path: string }[] }).issues.map((i) => i.path)).toContain(path);
      // Nothing was written.
      expect(await readFile(join(root, id, "events.jsonl"), "utf8")).toBe("");
    });
  }

  it("is refused for a circular reference, naming where it closes", async () => {
    const { store, id } = await openSession();
    const input: Record<string, unknown> = { a: { b: {} } };
    (input.a as { b: Record<string, unknown> }).b.back = input;
    const error = await refusal(store.append(id, toolCall(input)));
    expect(error.message).toContain("payload.input.a.b.back");
  });

  it("is refused for a getter that throws, with what it threw as the cause", async () => {
    const { store, id } = await openSession();
    const boom = new Error("no access");
    const input = {
      get secret(): string {
        throw boom;
      },
    };
    const error = await refusal(store.append(id, { type: "note", payload: { input } }));
    expect(error.message).toContain("payload.input.secret");
    expect(error.cause).toBe(boom);
  });

  it("is refused for a getter that throws where a built-in schema reads it, naming it too", async () => {
    const { store, id } = await openSession();
    const payload = {
      callId: "c1",
      name: "edit",
      input: {},
      get extra(): string {
        throw new Error("no access");
      },
    };
    const error = await refusal(store.append(id, { type: "tool_call", payload }));
    expect(error.message).toContain("payload.extra");
  });

  it("is refused inside a batch, naming the event, and nothing of the batch is written", async () => {
    const { store, root, id } = await openSession();
    const error = await refusal(store.appendMany(id, [toolCall({ ok: 1 }), toolCall({ size: Number.NaN })]));
    expect(error.message).toContain("payload.input.size");
    expect(error.message).toContain("event 1");
    expect(await readFile(join(root, id, "events.jsonl"), "utf8")).toBe("");
  });

  for (const durability of ["batch", "none"] as const) {
    it(`is refused under durability "${durability}" too, and the good appends beside it still land`, async () => {
      const root = await tempDir();
      const store = openStore({ root, durability, events });
      const { id } = await store.create();
      const results = await Promise.allSettled([
        store.append(id, toolCall({ n: 1 })),
        store.append(id, toolCall({ n: 10n })),
        store.append(id, toolCall({ n: 3 })),
      ]);
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      expect(isAgentTapeError((results[1] as PromiseRejectedResult).reason, "INVALID_EVENT")).toBe(true);
      expect((await store.readAll(id)).map((e) => (e.payload as { input: { n: number } }).input.n)).toEqual([1, 3]);
    });
  }
});

describe("what append returns", () => {
  it("deep-equals what read gives back later, for a payload JSON keeps as it is", async () => {
    const { store, id } = await openSession();
    const payload = { z: 1, a: [1, "two", { nested: true, nothing: null }], text: "é\u2028\ud800", neg: -1.5e-7 };
    const returned = await store.append(id, { type: "note", payload });
    const [read] = await store.readAll(id);
    expect(returned).toStrictEqual(read);
  });

  it("is a copy: changing the caller's object afterwards changes neither it nor the tape", async () => {
    const { store, id } = await openSession();
    const input = { size: 3 };
    const returned = await store.append(id, toolCall(input));
    input.size = 4;
    expect((returned.payload as { input: unknown }).input).toEqual({ size: 3 });
    const [read] = await store.readAll(id);
    expect(read).toStrictEqual(returned);
  });

  it("drops undefined object fields, as JSON does, and returns the payload without them", async () => {
    const { store, id } = await openSession();
    const returned = await store.append(id, toolCall({ size: 3, label: undefined }));
    expect(Object.keys(returned.payload.input as object)).toEqual(["size"]);
    const [read] = await store.readAll(id);
    expect(read).toStrictEqual(returned);
  });

  it("turns -0 into 0 on the returned event too, as the tape holds it", async () => {
    const { store, id } = await openSession();
    const returned = await store.append(id, { type: "note", payload: { zero: -0 } });
    const [read] = await store.readAll(id);
    expect(read).toStrictEqual(returned);
    expect(Object.is((returned.payload as { zero: number }).zero, 0)).toBe(true);
  });

  it("matches what read gives for every event of an appendMany, and under group commit", async () => {
    const root = await tempDir();
    const store = openStore({ root, durability: "batch", events });
    const { id } = await store.create();
    const many = await store.appendMany(id, [
      { type: "note", payload: { a: undefined, b: 1 } },
      { type: "note", payload: [1, { c: undefined }] },
    ]);
    const grouped = await Promise.all(
      [1, 2, 3].map((n) => store.append(id, { type: "note", payload: { n, u: undefined } })),
    );
    expect(await store.readAll(id)).toStrictEqual([...many, ...grouped]);
  });
});
