import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAgentTapeError } from "../../src/index.js";
import { runChild } from "../helpers/children.js";
import { openStore, tempDir } from "../helpers/fixture.js";

async function twoMessages() {
  const root = join(await tempDir("agent-tape-expected-"), "sessions");
  const store = openStore({ root, lockIdleMs: 0 });
  const { id } = await store.create();
  for (const content of ["one", "two"]) await store.append(id, { type: "message", payload: { role: "user", content } });
  return { root, store, id };
}

const message = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("optimistic concurrency: append with the last sequence it expects (one child process per test)", () => {
  it("after another process appended: SEQUENCE_CONFLICT with the current last sequence, nothing written", async () => {
    const { root, store, id } = await twoMessages();
    const seen = await store.head(id);
    expect(seen).toBe(2);
    const other = JSON.parse((await runChild("append-once.ts", [root, id, "2000", "from the other process"])).stdout);
    expect(other).toEqual({ ok: true, sequence: 3 });

    const error = await errorOf(store.append(id, message("mine"), { expectedLastSequence: seen }));

    expect(isAgentTapeError(error, "SEQUENCE_CONFLICT"), String(error)).toBe(true);
    expect(error).toMatchObject({ expected: 2, actual: 3 });
    expect((await store.readAll(id)).map((e) => e.sequence)).toEqual([1, 2, 3]);
    const batch = errorOf(store.appendMany(id, [message("a"), message("b")], { expectedLastSequence: seen }));
    expect(isAgentTapeError(await batch, "SEQUENCE_CONFLICT")).toBe(true);
    expect((await store.append(id, message("mine"), { expectedLastSequence: 3 })).sequence).toBe(4);
  });

  it("after another process rewound: head() says so, and the expected-sequence append is refused", async () => {
    const { root, store, id } = await twoMessages();
    await store.append(id, message("three"));
    const seen = await store.head(id); // 3
    const other = JSON.parse((await runChild("rewind-once.ts", [root, id, "1"])).stdout);
    expect(other).toEqual({ ok: true, marker: 4 });

    expect(await store.head(id)).toBe(4);
    const error = await errorOf(store.append(id, message("answer to three"), { expectedLastSequence: seen }));
    expect(isAgentTapeError(error, "SEQUENCE_CONFLICT"), String(error)).toBe(true);
    expect(error).toMatchObject({ expected: 3, actual: 4 });
    const batch = errorOf(store.appendMany(id, [message("a"), message("b")], { expectedLastSequence: seen }));
    expect(await batch).toMatchObject({ code: "SEQUENCE_CONFLICT", expected: 3, actual: 4 });
    expect((await store.readAll(id)).map((e) => e.sequence)).toEqual([1, 4]);
    // What moved is read from the sequence it expected on: the other process's rewind marker.
    expect((await store.readAll(id, { fromSequence: seen + 1 })).map((e) => e.type)).toEqual(["session_rewind"]);
  });
});
