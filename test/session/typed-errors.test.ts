import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { codeOf } from "../helpers/outcomes.js";
import { tempStore } from "../helpers/fixture.js";

// Inputs that once failed with a raw TypeError, or were silently accepted
// (README, "Read it back").

const storeWith = (events = {}) => tempStore({ events });

describe("event types named like Object's own members", () => {
  for (const type of ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"]) {
    it(`"${type}" is an unknown type (INVALID_EVENT), not a TypeError`, async () => {
      const { store } = await storeWith();
      const { id } = await store.create();
      expect(await codeOf(store.append(id, { type, payload: {} } as never))).toBe("INVALID_EVENT");
      expect(await codeOf(store.appendMany(id, [{ type, payload: {} }] as never))).toBe("INVALID_EVENT");
      await expect(store.append(id, { type, payload: {} } as never)).rejects.toThrow(/Unknown event type/);
      expect(await store.readAll(id)).toEqual([]);
    });
  }

  it("can be registered as a user type and appended like any other", async () => {
    const { store } = await storeWith({ toString: z.object({ n: z.number() }) });
    const { id } = await store.create();
    const event = await store.append(id, { type: "toString", payload: { n: 1 } } as never);
    expect(await store.readAll(id)).toEqual([event]);
  });
});

describe("read ranges", () => {
  const bad: [string, Record<string, unknown>][] = [
    ["fromSequence NaN", { fromSequence: Number.NaN }],
    ["toSequence NaN", { toSequence: Number.NaN }],
    ["fromSequence 1.5", { fromSequence: 1.5 }],
    ["fromSequence as a string", { fromSequence: "2" }],
    ["toSequence -Infinity", { toSequence: Number.NEGATIVE_INFINITY }],
  ];
  for (const [what, range] of bad) {
    it(`${what} is INVALID_ARGUMENT, not every event`, async () => {
      const { store } = await storeWith();
      const { id } = await store.create();
      await store.append(id, { type: "message", payload: { role: "user", content: "hi" } });
      expect(await codeOf(store.readAll(id, range as never))).toBe("INVALID_ARGUMENT");
    });
  }
});

describe("create's workspace", () => {
  it("that does not exist is INVALID_ARGUMENT, and no session is made", async () => {
    const { store, root } = await storeWith();
    expect(await codeOf(store.create({ workspace: join(root, "nowhere") }))).toBe("INVALID_ARGUMENT");
    expect(await store.list()).toEqual([]);
  });

  it("that is a file is INVALID_ARGUMENT, and no session is made", async () => {
    const { store, root } = await storeWith();
    const file = join(root, "a-file");
    await writeFile(file, "x");
    expect(await codeOf(store.create({ workspace: file }))).toBe("INVALID_ARGUMENT");
    expect(await store.list()).toEqual([]);
  });

  it("that is a folder is taken", async () => {
    const { store, root } = await storeWith();
    await mkdir(join(root, "ws"));
    expect((await store.create({ workspace: join(root, "ws") })).workspace).toBe(join(root, "ws"));
  });
});
