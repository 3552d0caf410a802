import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { childCommand } from "../helpers/children.js";
import { tempDir } from "../helpers/fixture.js";

// A capture in a process that has run out of descriptors (EMFILE, made for real: the child takes up all but 0 to 12
// of them before each capture) must fail, STORAGE_FAILED with osCode EMFILE, or record the file whole. Recording it
// "unreadable" would lose its before-state for a reason that is the process's, not the file's: the tool then
// changes it, and no rewind can put it back.

interface Outcome {
  free: number;
  record?: { kind: string; reason?: string; detail?: string };
  error?: string;
  osCode?: string;
}

describe("a capture out of descriptors", () => {
  it("fails with STORAGE_FAILED (EMFILE) or records the file whole, never 'unreadable' (13 captures)", async () => {
    const root = await tempDir("agent-tape-capture-fds-");
    const { stdout } = await promisify(execFile)(
      "bash",
      ["-c", 'ulimit -n 256 && exec "$0" "$@"', ...childCommand("capture-few-descriptors.ts", [root])],
      { maxBuffer: 1 << 20 },
    );
    const { outcomes, tape } = JSON.parse(stdout) as { outcomes: Outcome[]; tape: { files: Outcome["record"][] }[] };
    expect(outcomes).toHaveLength(13);
    for (const outcome of outcomes) {
      if (outcome.error === undefined) expect(outcome.record?.kind, JSON.stringify(outcome)).toBe("blob");
      else expect(outcome, JSON.stringify(outcome)).toMatchObject({ error: "STORAGE_FAILED", osCode: "EMFILE" });
    }
    // Some failed (no descriptor at all) and some, given enough, succeeded: both ways were seen.
    expect(outcomes.some((o) => o.error !== undefined)).toBe(true);
    expect(outcomes.some((o) => o.record !== undefined)).toBe(true);
    // What the tape holds: the first capture, then one checkpoint per capture that succeeded, each a blob.
    const kinds = tape.flatMap((payload) => payload.files.map((file) => file?.kind));
    expect(kinds).toEqual(Array(1 + outcomes.filter((o) => o.record).length).fill("blob"));
  }, 120_000);
});
