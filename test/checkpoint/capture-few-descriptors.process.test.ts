import { describe, expect, it } from "vitest";
import { Child } from "../helpers/children.js";
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
  it("STORAGE_FAILED (EMFILE) or the file recorded whole, never 'unreadable' (13 captures, 13 commands)", async () => {
    const root = await tempDir("agent-tape-capture-fds-");
    const run = await new Child("capture-few-descriptors.ts", [root], {}, { descriptors: 256 }).done();
    expect(run.code, run.stderr).toBe(0);
    const stdout = run.stdout;
    const { outcomes, commands, scanRead, tape } = JSON.parse(stdout) as {
      outcomes: Outcome[];
      commands: Omit<Outcome, "record">[];
      scanRead: { error?: string; osCode?: string; read?: unknown };
      tape: { tool: string; files: Outcome["record"][] }[];
    };
    expect(outcomes).toHaveLength(13);
    for (const outcome of outcomes) {
      if (outcome.error === undefined) expect(outcome.record?.kind, JSON.stringify(outcome)).toBe("blob");
      else expect(outcome, JSON.stringify(outcome)).toMatchObject({ error: "STORAGE_FAILED", osCode: "EMFILE" });
    }
    // Some failed (no descriptor at all) and some, given enough, succeeded: both ways were seen.
    expect(outcomes.some((o) => o.error !== undefined)).toBe(true);
    expect(outcomes.some((o) => o.record !== undefined)).toBe(true);
    // What the tape holds: the first capture, then one checkpoint per capture that succeeded, each a blob.
    const captured = tape.filter((payload) => payload.tool === "edit_file");
    const kinds = captured.flatMap((payload) => payload.files.map((file) => file?.kind));
    expect(kinds).toEqual(Array(1 + outcomes.filter((o) => o.record).length).fill("blob"));

    // A shell command's capture scans the workspace before and after the command: the same rule. Before, a folder it
    // could not list (EMFILE) was kept as the index knew it, and a file it could not open was recorded unreadable.
    for (const command of commands)
      if (command.error !== undefined)
        expect(command, JSON.stringify(command)).toMatchObject({ error: "STORAGE_FAILED", osCode: "EMFILE" });
    expect(commands.some((c) => c.error !== undefined)).toBe(true);
    const ran = commands.filter((c) => c.error === undefined).length;
    expect(ran).toBeGreaterThan(0);
    const byCommands = tape.filter((payload) => payload.tool === "bash");
    expect(byCommands).toHaveLength(ran);
    for (const payload of byCommands)
      for (const file of payload.files) expect([file?.kind, file?.reason ?? null]).toEqual(["blob", null]);
    // The scan's read itself, with no descriptor left: STORAGE_FAILED, where it said "unreadable" before.
    expect(scanRead).toEqual({ error: "STORAGE_FAILED", osCode: "EMFILE" });
  }, 120_000);
});
