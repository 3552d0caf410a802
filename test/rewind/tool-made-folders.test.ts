// Found by the whole-workspace property test (whole-workspace.property.test.ts), shrunk to: a tool writes
// `new/g.txt` (making `new` on the way), then a rewind to before it. The rewind took the file away but left the
// folder `new`, which the workspace never had: the capture recorded only the path the tool named.
import { mkdir, readdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

it("folders a tool makes on the way to the file it names: a rewind removes them, an undo puts them back", async () => {
  const base = await realpath(await tempDir("agent-tape-tool-folders-"));
  const workspace = join(base, "ws");
  await mkdir(workspace);
  await writeFile(join(workspace, "a.txt"), "a\n");
  const store = openStore({ root: join(base, "sessions") });
  try {
    const checkpoints = new CheckpointStore(store);
    const { id } = await store.create({ workspace });
    await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
    await checkpoints.around(id, { tool: "write_file", paths: ["new/deeper/g.txt"] }, async () => {
      await mkdir(join(workspace, "new/deeper"), { recursive: true });
      await writeFile(join(workspace, "new/deeper/g.txt"), "g\n");
    });
    await rewind(store, id, { toSequence: 1, mode: "files" });
    expect((await readdir(workspace)).sort()).toEqual(["a.txt"]);
    await undoRewind(store, id);
    expect(await readdir(join(workspace, "new/deeper"))).toEqual(["g.txt"]);
  } finally {
    await store.close();
  }
});
