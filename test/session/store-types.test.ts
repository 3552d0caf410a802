// Type-level promises of SessionStore. The compile is the test: `npm run typecheck` covers this file (tsconfig
// includes test/), and a broken promise is a type error here; vitest then only runs the trivial bodies.
import { describe, expectTypeOf, it } from "vitest";
import { z } from "zod";
import type { SessionStore, BuiltinEvents, HeldSession, TypedEvent } from "../../src/index.js";
import { openStore } from "../helpers/fixture.js";

const events = { plan: z.object({ steps: z.array(z.string()) }) };
type Plan = { steps: string[] };

describe("SessionStore types", () => {
  it("readAll({ types }) narrows the events like read() does", () => {
    const store = openStore({ root: "/nonexistent", events });
    const some = () => store.readAll("id", { types: ["plan", "tool_call"] });
    type Some = Awaited<ReturnType<typeof some>>[number];
    expectTypeOf<Some["type"]>().toEqualTypeOf<"plan" | "tool_call">();
    expectTypeOf<Extract<Some, { type: "plan" }>["payload"]>().toEqualTypeOf<Plan>();
    const all = () => store.readAll("id");
    expectTypeOf<Awaited<ReturnType<typeof all>>[number]["type"]>().toEqualTypeOf<
      TypedEvent<BuiltinEvents & typeof events>["type"]
    >();
  });

  it("a store with its own event types can be passed where a plain SessionStore is expected", () => {
    const typed = openStore({ root: "/nonexistent", events });
    expectTypeOf(typed).toExtend<SessionStore>();
    const countMessages = (store: SessionStore) =>
      store.fold("id", (n: number, e) => (e.type === "message" ? n + 1 : n), 0);
    void countMessages;
  });

  it("append and withLock still check payloads and type what they return", () => {
    const typed = openStore({ root: "/nonexistent", events });
    const plan = () => typed.append("id", { type: "plan", payload: { steps: ["a"] } });
    expectTypeOf<Awaited<ReturnType<typeof plan>>["payload"]>().toEqualTypeOf<Plan>();
    // @ts-expect-error steps must be an array
    const wrong = () => typed.append("id", { type: "plan", payload: { steps: "a" } });
    void wrong;
    const held = (session: HeldSession<typeof events>) => session.append({ type: "plan", payload: { steps: [] } });
    expectTypeOf<Awaited<ReturnType<typeof held>>["type"]>().toEqualTypeOf<"plan">();
  });
});
