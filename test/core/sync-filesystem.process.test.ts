import { describe, expect, it } from "vitest";
import { runChild } from "../helpers/children.js";
import { tempDir } from "../helpers/fixture.js";

// syncFilesystem in a process past the resident memory from which it starts `sync` from a worker thread
// (src/core/sync-filesystem.ts): each call is made and answered, and the worker, idle again, lets the process end.
describe("syncFilesystem from a large process", () => {
  it("syncs through its worker, at once and in turn, and lets the process exit", async () => {
    const folder = await tempDir("agent-tape-sync-fs-");
    // A worker left holding the process open would keep this child running past the test's timeout.
    const run = await runChild("sync-filesystem-big.ts", [folder]);
    expect(run.code, run.stderr).toBe(0);
    const said = JSON.parse(run.stdout.trim().split("\n").pop()!) as { outcomes: boolean[]; rssMB: number };
    expect(said.outcomes).toEqual([true, true, true, true]);
    expect(said.rssMB).toBeGreaterThanOrEqual(128);
  });
});
