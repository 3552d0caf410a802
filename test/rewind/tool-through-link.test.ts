import { mkdir, readdir, readFile, readlink, realpath, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

/**
 * A workspace made by `make`, a session on it with one message (the point to rewind to, #1), and `story` run
 * against them; the store is closed after.
 */
async function inSession(
  make: (workspace: string) => Promise<void>,
  story: (t: {
    workspace: string;
    id: string;
    checkpoints: CheckpointStore;
    store: ReturnType<typeof openStore>;
  }) => Promise<void>,
): Promise<void> {
  const base = await realpath(await tempDir("agent-tape-tool-link-"));
  const workspace = join(base, "ws");
  await make(workspace);
  const store = openStore({ root: join(base, "sessions") });
  try {
    const checkpoints = new CheckpointStore(store);
    const { id } = await store.create({ workspace });
    await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
    await story({ workspace, id, checkpoints, store });
  } finally {
    await store.close();
  }
}

// Found by the whole-workspace property test (family "tool-through-links"), shrunk to: a tool is handed
// `in-link` (a link to `a.txt` inside the workspace) and writes through it; a rewind to before it put the link
// back and left `a.txt` as the tool wrote it, since the capture recorded the link and never its target.
it("a tool that writes through a link inside the workspace: the rewind puts the link's target back", async () => {
  const make = async (workspace: string) => {
    await mkdir(join(workspace, "d"), { recursive: true });
    await writeFile(join(workspace, "d/a.txt"), "before\n");
    await symlink("d/a.txt", join(workspace, "in-link"));
    await symlink("in-link", join(workspace, "link-to-link"));
  };
  await inSession(make, async ({ workspace, id, checkpoints, store }) => {
    await checkpoints.around(id, { tool: "write_file", paths: ["link-to-link"] }, () =>
      writeFile(join(workspace, "link-to-link"), "written through the links\n"),
    );
    await rewind(store, id, { toSequence: 1, mode: "files" });
    expect(await readFile(join(workspace, "d/a.txt"), "utf8")).toBe("before\n");
    expect(await readlink(join(workspace, "link-to-link"))).toBe("in-link");
    await undoRewind(store, id);
    expect(await readFile(join(workspace, "d/a.txt"), "utf8")).toBe("written through the links\n");
  });
});

// Found by the whole-workspace property test (seed 1241112843, soak), shrunk to: `d` a link to the folder `a.txt`,
// a tool handed `d/e/f.txt` writes it (making `a.txt/e`), and a rewind to before it was refused: "a.txt/e
// (created)". The capture recorded the path by the name the tool gave, not where it landed, so nothing on the tape
// named `a.txt/e`, inside a folder whose every entry was recorded.
it("a tool that writes below a link to a folder inside the workspace: the rewind removes what it made", async () => {
  const make = async (workspace: string) => {
    await mkdir(join(workspace, "a.txt"), { recursive: true });
    await writeFile(join(workspace, "a.txt/inner"), "x\n");
    await symlink("a.txt", join(workspace, "d"));
  };
  await inSession(make, async ({ workspace, id, checkpoints, store }) => {
    // The tape records a.txt as a complete listing (a tool named the folder), then a tool writes below the link.
    await checkpoints.around(id, { tool: "edit", paths: ["a.txt"] }, () =>
      writeFile(join(workspace, "a.txt/inner"), "y\n"),
    );
    await checkpoints.around(id, { tool: "write_file", paths: ["d/e/f.txt"] }, async () => {
      await mkdir(join(workspace, "d/e"), { recursive: true });
      await writeFile(join(workspace, "d/e/f.txt"), "through the link\n");
    });
    await rewind(store, id, { toSequence: 1, mode: "files" });
    expect(await readFile(join(workspace, "a.txt/inner"), "utf8")).toBe("x\n");
    expect(await readdir(join(workspace, "a.txt"))).toEqual(["inner"]);
    expect(await readlink(join(workspace, "d"))).toBe("a.txt");
    await undoRewind(store, id);
    expect(await readFile(join(workspace, "a.txt/e/f.txt"), "utf8")).toBe("through the link\n");
  });
});
