import { describe, expect, it } from "vitest";
import { FS_CALLS, traceChild } from "../helpers/syscalls.js";
import { tempDir } from "../helpers/fixture.js";

// The file-system calls of one capture, counted by strace in a real child process, so they do not creep
// back: each is a round trip through libuv's thread pool, and a capture of one new 4 KB file
// made ~29 of them where the durable steps by hand make ~15. The workspace's real path is remembered per
// store, the parents are looked at only through the folder held open, and the blob's folder checks go
// together.

describe("round trips of a capture (strace)", () => {
  it("one new 4 KB file, lease held: no realpath, at most 28 file-system calls", async () => {
    const dir = await tempDir("agent-tape-capture-calls-");
    const run = await traceChild("capture-traced.ts", [dir], FS_CALLS, dir);
    expect(JSON.parse(run.stdout.trim())).toEqual({ kind: "blob" });
    const calls = Object.fromEntries(run.calls);
    const total = [...run.calls.values()].reduce((a, b) => a + b, 0);
    expect(calls.readlink ?? 0, JSON.stringify(calls)).toBeLessThanOrEqual(1); // the held folder's own check
    // 24, and two synchronous looks for the session's blob pack (blobs/, blobs/pack): a blob packed already is not
    // stored again (docs/ARCHITECTURE.md, "Blobs"); and two synchronous lstats of the folders above the path
    // (src, src/deep): a tool writing below a link to a folder inside the workspace lands elsewhere, and its
    // capture takes that place's before-state too (pathsBelowLinks in checkpoint-store.ts).
    expect(total, JSON.stringify(calls)).toBeLessThanOrEqual(28);
  });
});
