// The README's first quickstart ("your own tool loop"), as a program: the part between the readme markers is the
// README's code block, byte for byte once its imports name the package (scripts/check-readme-snippets.mjs).
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const home = await mkdtemp(join(tmpdir(), "agent-tape-readme-"));
const workspace = join(home, "ws");
await mkdir(workspace);
await writeFile(join(workspace, "app.ts"), 'console.log("v1");\n');
const myTools = {
  edit_file: {
    execute: async (input: { path: string }, _call: { toolCallId: string }) =>
      writeFile(join(workspace, input.path), 'console.log("v2");\n'),
  },
  bash: { execute: async () => "ran" },
};

// #region readme
import { CheckpointStore, SessionStore, rewind, undoRewind, withCheckpoints } from "../src/index.js";

const store = new SessionStore({ root: join(home, "sessions") });
const s = await store.create({ title: "fix the build", workspace });
const checkpoints = new CheckpointStore(store);
const tools = withCheckpoints(myTools, checkpoints, s.id, {
  edit_file: (input) => [input.path], // the paths one call touches: snapshotted before it runs
  bash: "shell", // a command: the workspace index records whatever it changed
});
await store.append(s.id, { type: "message", payload: { role: "user", content: "Make app.ts print v2" } });
await tools.edit_file.execute({ path: "app.ts" }, { toolCallId: "c1" });
await rewind(store, s.id, { beforeCallId: "c1" }); // files and conversation as they were before call c1
await undoRewind(store, s.id); // changed your mind
// #endregion readme

console.log(`app.ts after the undo: ${(await readFile(join(workspace, "app.ts"), "utf8")).trim()}`);
await store.close();
await rm(home, { recursive: true });
