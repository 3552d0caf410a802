// agent-tape/claude-agent-sdk lists one project's sessions (the SDK asks at every `continue: true`): what it reads
// grows with that project's sessions, not with every session in the store.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fsBackend } from "../../src/backend/fs/fs-backend.js";
import type { StorageBackend } from "../../src/backend/types.js";
import { claudeEvents, claudeSessionStore } from "../../src/adapters/claude-agent-sdk/index.js";
import { closeAfter, openStore, tempDir } from "../helpers/fixture.js";

/** The real fs backend, noting each session id a call is about (every method that takes one takes it first). */
function notingSessionsRead(backend: StorageBackend): { backend: StorageBackend; read: Set<string> } {
  const read = new Set<string>();
  const noting = new Proxy(backend, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (typeof args[0] === "string" && property !== "createSession") read.add(args[0]);
        return value.apply(target, args);
      };
    },
  });
  return { backend: noting, read };
}

const entry = (text: string) => ({
  type: "user",
  uuid: text,
  timestamp: "2026-12-01T00:00:00.000Z",
  message: { role: "user", content: [{ type: "text", text }] },
});

describe("agent-tape/claude-agent-sdk listings", () => {
  it("listSessions of one project reads none of the sessions of the others", async () => {
    const { backend, read } = notingSessionsRead(fsBackend({ root: join(await tempDir("agent-tape-claude-"), "s") }));
    const store = closeAfter(claudeSessionStore({ store: openStore({ backend, events: claudeEvents }) }));
    for (let i = 0; i < 30; i++)
      await store.append({ projectKey: "-home-me-other", sessionId: `s${i}` }, [entry(`o${i}`)]);
    await store.append({ projectKey: "-home-me-mine", sessionId: "only" }, [entry("m")]);

    read.clear();
    expect(await store.listSessions("-home-me-mine")).toEqual([{ sessionId: "only", mtime: expect.any(Number) }]);
    expect(read.size, [...read].join(", ")).toBe(1);
  });
});
