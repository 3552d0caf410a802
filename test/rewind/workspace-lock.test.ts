import { chmod, mkdir, realpath, rename } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isAgentTapeError } from "../../src/index.js";
import { lockWorkspace, workspaceLockFolder } from "../../src/rewind/workspace-lock.js";
import { tempDir } from "../helpers/fixture.js";

const saved = { lockDir: process.env.AGENT_TAPE_LOCK_DIR, runtime: process.env.XDG_RUNTIME_DIR };
afterEach(async () => {
  for (const [name, value] of [
    ["AGENT_TAPE_LOCK_DIR", saved.lockDir],
    ["XDG_RUNTIME_DIR", saved.runtime],
  ] as const)
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
});

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("the workspace lock", () => {
  it("is keyed by the folder itself: the folder renamed while held is still locked (WORKSPACE_LOCKED)", async () => {
    const base = await realpath(await tempDir("agent-tape-wslock-"));
    process.env.AGENT_TAPE_LOCK_DIR = join(base, "locks");
    await mkdir(join(base, "ws"));
    const held = await lockWorkspace(join(base, "ws"));
    await rename(join(base, "ws"), join(base, "moved"));
    await mkdir(join(base, "ws")); // another folder at the old path is another workspace

    const error = await errorOf(lockWorkspace(join(base, "moved"), { waitMs: 200 }));
    expect(isAgentTapeError(error, "WORKSPACE_LOCKED"), String(error)).toBe(true);
    expect((error as Error).message).toContain("moved");
    const other = await lockWorkspace(join(base, "ws"), { waitMs: 200 });
    await other.release();

    await held.release();
    const again = await lockWorkspace(join(base, "moved"), { waitMs: 200 });
    again.assertHeld();
    await again.release();
  });

  it("lives in a per-user folder outside every workspace, and refuses one others can write", async () => {
    const base = await realpath(await tempDir("agent-tape-wslock-"));
    delete process.env.AGENT_TAPE_LOCK_DIR;
    process.env.XDG_RUNTIME_DIR = base;
    expect(workspaceLockFolder()).toBe(join(base, `agent-tape-${process.getuid!()}`, "workspace-locks"));
    await mkdir(join(base, "ws"));
    const lock = await lockWorkspace(join(base, "ws"));
    await lock.release();

    await chmod(join(base, `agent-tape-${process.getuid!()}`), 0o777); // as if made by someone else for us
    const error = await errorOf(lockWorkspace(join(base, "ws")));
    expect(isAgentTapeError(error, "STORAGE_FAILED"), String(error)).toBe(true);
    expect((error as Error).message).toContain(`agent-tape-${process.getuid!()}`);
  });
});
