import { describe, expect, it } from "vitest";
import { z } from "zod";
import { isAgentTapeError } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// Under group commit one payload that cannot be written must not fail the good
// appends that happened to share its write. Each event is checked and serialised before it joins a
// group (docs/ARCHITECTURE.md, "On disk").

// Schemas a user might write that admit a value JSON cannot hold: a BigInt, bare or inside an object.
const events = {
  counter: z.object({ n: z.unknown() }),
  big: z.bigint(),
  anything: z.unknown(),
};

const cyclic = (): unknown => {
  const o: Record<string, unknown> = { name: "loop" };
  o.self = o;
  return o;
};

const bad = [
  ["a BigInt in an object", { type: "counter", payload: { n: 1n } }],
  ["a bare BigInt payload", { type: "big", payload: 2n }],
  ["a circular payload", { type: "anything", payload: cyclic() }],
] as const;

describe("group commit with one bad payload", () => {
  it.each(bad)("[good, %s, good] appended at once: only the bad one fails", async (_name, badEvent) => {
    const store = openStore({ root: await tempDir(), durability: "batch", events });
    const { id } = await store.create();
    const good = (n: number) => ({ type: "counter" as const, payload: { n } });
    const outcomes = await Promise.allSettled([
      store.append(id, good(1)),
      store.append(id, badEvent as never),
      store.append(id, good(3)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(isAgentTapeError((outcomes[1] as PromiseRejectedResult).reason, "INVALID_EVENT")).toBe(true);
    const written = await store.readAll(id);
    expect(written.map((e) => e.payload)).toEqual([{ n: 1 }, { n: 3 }]);
    expect(written.map((e) => e.sequence)).toEqual([1, 2]);
    // The session still takes appends afterwards.
    expect((await store.append(id, good(4))).sequence).toBe(3);
  });
});
