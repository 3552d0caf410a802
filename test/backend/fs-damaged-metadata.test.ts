import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAgentTapeError, verify } from "../../src/index.js";
import { cli } from "../cli/harness.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// A session.json or rewind intent that is not what the library wrote (garbage, empty,
// `{}`) once threw a raw SyntaxError from every call while `verify` said intact. Now each call fails
// with a typed error naming the file (the parse error as its cause), and verify reports it.

const damage: [string, string][] = [
  ["garbage", "{not json"],
  ["empty", ""],
  ["{}", "{}"],
  ["an array", "[1]"],
];

async function sessionWith(file: (root: string, id: string) => string, text: string) {
  const root = await tempDir();
  const store = openStore({ root, lockIdleMs: 0 });
  const { id } = await store.create();
  await store.append(id, { type: "message", payload: { role: "user", content: "kept" } });
  const path = file(root, id);
  await mkdir(join(path, ".."), { recursive: true });
  await writeFile(path, text);
  return { root, store, id };
}

/** The code a call fails with; a raw error fails the test. */
async function typedCode(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    if (!isAgentTapeError(error)) throw error;
    return error.code;
  }
}

describe("a damaged session.json", () => {
  for (const [what, text] of damage) {
    it(`(${what}) is STORE_TAMPERED from get and CLI show; list and verify name it; the log is kept`, async () => {
      const { root, store, id } = await sessionWith((r, i) => join(r, i, "session.json"), text);
      expect(await typedCode(store.get(id))).toBe("STORE_TAMPERED");
      // The log does not depend on session.json: appending goes on (or fails typed), never raw.
      await typedCode(store.append(id, { type: "message", payload: { role: "user", content: "x" } }));
      expect((await store.list()).map((s) => [s.id, s.unreadable?.code])).toEqual([[id, "STORE_TAMPERED"]]);
      const health = await verify(store, id);
      expect(health.ok).toBe(false);
      expect(health.problems.map((p) => p.kind)).toContain("metadata_unreadable");
      const shown = await cli(["show", id, "--root", root]);
      expect(shown.code).toBe(1);
      expect(shown.stderr).toContain("STORE_TAMPERED");
      expect(shown.stderr).toContain("session.json");
      // Nothing stored was lost: the log still reads (salvage needs no metadata).
      expect((await store.salvage(id)).events[0]?.payload).toEqual({ role: "user", content: "kept" });
    });
  }
});

describe("a damaged rewind intent", () => {
  for (const [what, text] of damage) {
    it(`(${what}) is a typed error or reported, never a raw SyntaxError; verify names it`, async () => {
      const { root, store, id } = await sessionWith((r, i) => join(r, i, "records", "rewind-intent.json"), text);
      await typedCode(store.get(id));
      await typedCode(store.readAll(id));
      await typedCode(store.append(id, { type: "message", payload: { role: "user", content: "x" } }));
      const health = await verify(store, id);
      expect(health.ok).toBe(false);
      expect(health.problems.map((p) => p.message).join("\n")).toContain("rewind-intent");
      const shown = await cli(["show", id, "--root", root]);
      expect(shown.stderr).not.toContain("SyntaxError");
    });
  }
});
