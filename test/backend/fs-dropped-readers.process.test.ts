import { describe, expect, it } from "vitest";
import { runChild } from "../helpers/children.js";
import { tempDir } from "../helpers/fixture.js";

// A reader of the log opens its descriptor with synchronous calls (src/backend/fs/log-reads.ts), not as a
// FileHandle, which Node closes when it is collected. A caller that drops a reader half way (an iterator neither
// finished nor returned) never runs its `finally`: the descriptor must still be closed once the reader is gone.
describe("readers dropped half way", () => {
  it("leave no descriptor open once collected (200 readers, one event taken from each)", async () => {
    const root = await tempDir("agent-tape-dropped-readers-");
    const run = await runChild("dropped-readers.ts", [root]);
    expect(run.code, run.stderr).toBe(0);
    const said = JSON.parse(run.stdout.trim().split("\n").pop()!) as {
      before: number;
      heldWhileDropped: number;
      after: number;
      dropped: number;
    };
    // While dropped and not yet collected each holds its log open: the test sees what it tests.
    expect(said.heldWhileDropped - said.before).toBeGreaterThanOrEqual(said.dropped / 2);
    expect(said.after - said.before).toBeLessThanOrEqual(5);
  });
});
