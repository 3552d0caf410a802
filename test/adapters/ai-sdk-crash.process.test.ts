// agent-tape/ai-sdk across kill -9: a child runs a real `ai` 6 agent loop (the SDK's
// mock model, real file and shell tools) and is killed with SIGKILL while its 4th tool call (a shell command)
// runs. A new store then resumes from the tape: the conversation comes back as model messages (the killed call
// answered as interrupted), a rewind to before the 2nd tool call restores the files byte for byte, and undo
// puts back what the run had done. One round per loop mode (generateText, streamText).
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { INTERRUPTED, aiSdkTape } from "../../src/adapters/ai-sdk/index.js";
import { rewind, undoRewind } from "../../src/index.js";
import { Child } from "../helpers/children.js";
import { textFilesOf } from "../helpers/workspace-tree.js";
import { openStore, tempDir } from "../helpers/fixture.js";

describe("agent-tape/ai-sdk, killed mid-tool", () => {
  for (const mode of ["generateText", "streamText"] as const) {
    it(`${mode}: resume gives the tape back as model messages; rewind before the 2nd call restores files`, async () => {
      const base = await realpath(await tempDir("agent-tape-ai-sdk-crash-"));
      const root = join(base, "sessions");
      const workspace = join(base, "ws");
      await mkdir(workspace);
      await writeFile(join(workspace, "todo.txt"), "- write the notes\n");
      const setup = openStore({ root });
      const { id } = await setup.create({ workspace });
      await setup.close();

      const child = new Child("ai-sdk-agent-run.ts", [root, id, workspace, mode, "t4"]);
      await child.waitForLine((line) => line === "in-tool t4");
      const atKill = await textFilesOf(workspace);
      child.kill("SIGKILL");
      const ended = await child.done();
      expect(ended.signal).toBe("SIGKILL");
      expect(ended.stdout).not.toContain("finished");

      const store = openStore({ root });
      const messages = await aiSdkTape({ store, sessionId: id }).messages();
      expect(messages.map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
      ]);
      expect(messages[5]).toMatchObject({ content: [{ type: "text", text: "Stamping." }, { toolCallId: "t4" }] });
      expect(messages[6]).toMatchObject({
        content: [{ toolCallId: "t4", output: { type: "error-text", value: INTERRUPTED } }],
      });

      await rewind(store, id, { beforeCallId: "t2" });
      expect(await textFilesOf(workspace)).toEqual({ "notes.md": "# Notes\n", "todo.txt": "- write the notes\n" });
      expect((await aiSdkTape({ store, sessionId: id }).messages()).map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "tool",
        "assistant",
      ]);
      await undoRewind(store, id);
      expect(await textFilesOf(workspace)).toEqual(atKill);
      expect(atKill["notes.md"]).toBe("# Final notes\n");
      expect(atKill["todo.txt"]).toBeUndefined();
    });
  }
});
