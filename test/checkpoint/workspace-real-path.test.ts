import { mkdir, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, isAgentTapeError } from "../../src/index.js";
import { codeOf } from "../helpers/outcomes.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// A CheckpointStore resolves a workspace's real path once, not on every capture. What must not
// change with it: a workspace moved, removed or re-pointed since is never read through the stale path, so
// its files are never recorded absent (a rewind would delete them).

async function setUp() {
  const base = await realpath(await tempDir("agent-tape-real-path-"));
  const first = join(base, "first");
  const second = join(base, "second");
  await mkdir(join(first, "src"), { recursive: true });
  await mkdir(join(second, "src"), { recursive: true });
  await writeFile(join(first, "src", "a.ts"), "first\n");
  await writeFile(join(second, "src", "a.ts"), "second\n");
  const link = join(base, "ws");
  await symlink(first, link);
  const store = openStore({ root: join(base, "sessions") });
  const checkpoints = new CheckpointStore(store);
  const { id } = await store.create({ workspace: link });
  return { base, first, second, link, store, checkpoints, id };
}

describe("the workspace's real path, remembered per store", () => {
  it("a workspace link re-pointed between captures: the next capture reads the folder it now leads to", async () => {
    const s = await setUp();
    const before = await s.checkpoints.capture(s.id, { tool: "edit", paths: ["src/a.ts"] });
    expect(before?.payload.workspace).toBe(s.first);
    await rm(s.link);
    await symlink(s.second, s.link);
    const after = await s.checkpoints.capture(s.id, { tool: "edit", paths: ["src/a.ts"] });
    expect(after?.payload.workspace).toBe(s.second);
    const file = after?.payload.files[0];
    expect(file?.kind).toBe("blob");
    if (file?.kind === "blob") expect((await s.checkpoints.readBlob(s.id, file.blob)).toString()).toBe("second\n");
  });

  it("a workspace removed since the last capture: INVALID_ARGUMENT, nothing recorded absent", async () => {
    const s = await setUp();
    await s.checkpoints.capture(s.id, { tool: "edit", paths: ["src/a.ts"] });
    await rename(s.first, join(s.base, "moved-away"));
    const failed = s.checkpoints.capture(s.id, { tool: "edit", paths: ["src/a.ts"] });
    expect(await codeOf(failed)).toBe("INVALID_ARGUMENT");
    const events = await s.store.readAll(s.id);
    expect(events.filter((e) => e.type === "session_checkpoint")).toHaveLength(1);
    expect(isAgentTapeError(await failed.catch((e: unknown) => e), "INVALID_ARGUMENT")).toBe(true);
  });

  it("a workspace folder (no link) replaced by a link to another folder: followed, as an unknown path is", async () => {
    const s = await setUp();
    const { id } = await s.store.create({ workspace: s.first });
    await s.checkpoints.capture(id, { tool: "edit", paths: ["src/a.ts"] });
    await rename(s.first, join(s.base, "first-old"));
    await symlink(s.second, s.first);
    const after = await s.checkpoints.capture(id, { tool: "edit", paths: ["src/a.ts"] });
    expect(after?.payload.workspace).toBe(s.second);
    const file = after?.payload.files[0];
    expect(file?.kind).toBe("blob");
    if (file?.kind === "blob") expect((await s.checkpoints.readBlob(id, file.blob)).toString()).toBe("second\n");
  });

  it("after() (the after-state) follows a re-pointed workspace link too", async () => {
    const s = await setUp();
    await s.checkpoints.after(s.id, { tool: "edit", paths: ["src/a.ts"] });
    await rm(s.link);
    await symlink(s.second, s.link);
    await rm(join(s.second, "src", "a.ts"));
    await writeFile(join(s.second, "src", "b.ts"), "b\n");
    const states = await s.checkpoints.after(s.id, { tool: "edit", paths: ["src/a.ts"] });
    expect(states?.payload.workspace).toBe(s.second);
    expect(states?.payload.files).toEqual([{ path: "src/a.ts", kind: "absent" }]);
  });
});
