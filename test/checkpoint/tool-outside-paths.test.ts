// A tool call whose paths lead outside the workspace (`../x`, an absolute path elsewhere, a folder link or a
// file link that leads out) or name nothing (`""`, which would snapshot the whole workspace) is refused before
// the tool runs, with an error the model reads that names the path and why; `outsidePaths: "allow"` lets it
// run as before (recorded `skipped`). docs/ARCHITECTURE.md, "Adapters".
import { mkdir, readFile, readdir, realpath, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { CheckpointStore, type SessionStore, isAgentTapeError, withCheckpoints } from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

let base: string;
let workspace: string;
let outside: string;
let store: SessionStore;
let checkpoints: CheckpointStore;
let sessionId: string;

beforeEach(async () => {
  base = await realpath(await tempDir("agent-tape-tool-outside-"));
  workspace = join(base, "ws");
  outside = join(base, "outside");
  await mkdir(workspace);
  await mkdir(outside);
  await writeFile(join(outside, "secret.txt"), "outside\n");
  await writeFile(join(workspace, "a.txt"), "one\n");
  await symlink(outside, join(workspace, "out-dir"));
  await symlink(join(outside, "secret.txt"), join(workspace, "out-file"));
  await symlink(join(outside, "not-yet.txt"), join(workspace, "out-dangling"));
  await symlink("a.txt", join(workspace, "in-file"));
  store = openStore({ root: join(base, "sessions") });
  checkpoints = new CheckpointStore(store);
  sessionId = (await store.create({ workspace })).id;
});

type Call = { toolCallId?: string };
const writeTool = (ran: string[]) => ({
  execute: async ({ path }: { path: string }, _call?: Call) => {
    ran.push(path);
    if (path !== "") await writeFile(path.startsWith("/") ? path : join(workspace, path), "written by the tool\n");
    return `wrote ${path}`;
  },
});

const OUTSIDE_PATHS = [
  { path: "../outside/secret.txt", why: /leads outside the workspace/ },
  { path: "<outside>/absolute.txt", why: /leads outside the workspace/ },
  { path: "out-dir/secret.txt", why: /through a symbolic link that leads outside/ },
  { path: "out-file", why: /a symbolic link that leads outside/ },
  { path: "out-dangling", why: /a symbolic link that leads outside/ },
  { path: "", why: /names no file: it would snapshot the whole workspace/ },
];

describe("a tool call naming a path outside the workspace", () => {
  for (const { path: named, why } of OUTSIDE_PATHS)
    it(`is refused before the tool runs, naming the path and why: ${JSON.stringify(named)}`, async () => {
      const path = named.replace("<outside>", outside);
      const ran: string[] = [];
      const tools = withCheckpoints({ write_file: writeTool(ran) }, checkpoints, sessionId, {
        write_file: (input: { path: string }) => [input.path],
      });
      const error = await tools.write_file.execute({ path }, { toolCallId: "c1" }).catch((e: unknown) => e);
      expect(isAgentTapeError(error, "PATH_OUTSIDE_WORKSPACE")).toBe(true);
      expect((error as Error).message).toContain(JSON.stringify(path));
      expect((error as Error).message).toMatch(why);
      expect(ran).toEqual([]);
      expect(await readFile(join(outside, "secret.txt"), "utf8")).toBe("outside\n");
      expect(await readdir(outside)).toEqual(["secret.txt"]);
      expect(await store.readAll(sessionId, { types: ["session_checkpoint"] })).toEqual([]);
    });

  it("is refused whole when one of several paths leads out; inside paths and links inside are fine", async () => {
    const ran: string[] = [];
    const tools = withCheckpoints({ write_file: writeTool(ran) }, checkpoints, sessionId, {
      write_file: (input: { path: string }) => ["a.txt", input.path],
    });
    const error = await tools.write_file.execute({ path: "../outside/x" }).catch((e: unknown) => e);
    expect(isAgentTapeError(error, "PATH_OUTSIDE_WORKSPACE")).toBe(true);
    expect(ran).toEqual([]);
    for (const path of ["in-file", "new/folder/b.txt", "./a.txt", join(workspace, "a.txt")]) {
      await mkdir(join(workspace, "new/folder"), { recursive: true });
      expect(await tools.write_file.execute({ path })).toBe(`wrote ${path}`);
    }
    expect(ran).toEqual(["in-file", "new/folder/b.txt", "./a.txt", join(workspace, "a.txt")]);
  });

  it('runs, recorded as skipped, with outsidePaths: "allow"', async () => {
    const ran: string[] = [];
    const tools = withCheckpoints(
      { write_file: writeTool(ran) },
      checkpoints,
      sessionId,
      { write_file: (input: { path: string }) => [input.path] },
      { outsidePaths: "allow" },
    );
    expect(await tools.write_file.execute({ path: "../outside/secret.txt" })).toBe("wrote ../outside/secret.txt");
    expect(ran).toEqual(["../outside/secret.txt"]);
    const [checkpoint] = await store.readAll(sessionId, { types: ["session_checkpoint"] });
    expect(checkpoint?.payload.files).toEqual([
      { path: "../outside/secret.txt", kind: "skipped", reason: "outside_workspace" },
    ]);
  });
});
