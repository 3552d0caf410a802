import { describe, expect, it } from "vitest";
import { Child } from "../helpers/children.js";
import { tempDir } from "../helpers/fixture.js";

// A process allowed few descriptors (`ulimit -n`: 200, soft and hard) rewinds 300 files, each in a folder of its own.
// One operation keeps the folders it opens, up to a share of the descriptor limit (src/checkpoint/folder-budget.ts);
// a share fixed at 256 whatever the limit took every descriptor: the plan could then read none of the files, and
// the rewind was refused, each path "cannot be compared now (unreadable)", with nothing wrong in the workspace.

/** Runs `script` in a child allowed `limit` descriptors (soft and hard), failing the test if it fails. */
async function withDescriptors(limit: number, script: string, args: readonly string[]): Promise<string> {
  const run = await new Child(script, args, {}, { descriptors: limit }).done();
  expect(run.code, `${run.stderr.slice(0, 2000)}${run.stdout.slice(0, 2000)}`).toBe(0);
  return run.stdout;
}

describe("a process with few descriptors", () => {
  it("rewinds 300 files in 300 folders with 200 descriptors: every file restored", async () => {
    const dir = await tempDir("agent-tape-few-descriptors-");
    const out = await withDescriptors(200, "rewind-traced.ts", [dir, "300", "1"]);
    expect(JSON.parse(out.trim())).toEqual({ filesRestored: 300, intact: true });
  }, 120_000);

  it("out of descriptors: rewound whole, nothing changed, or rolled back by the next writer (31 rounds)", async () => {
    // Each round takes up all but 0 to 60 descriptors before a 20-file rewind. Out of them, the plan's reads fail
    // (STORAGE_FAILED, EMFILE: nothing changed yet), or the restore's (REWIND_FAILED; a roll-back that cannot open
    // what it needs either is left to the next writer, which rolls it back): never a workspace left half rewound.
    const root = await tempDir("agent-tape-rewind-fds-");
    const stdout = await withDescriptors(300, "rewind-few-descriptors.ts", [root]);
    const rounds = JSON.parse(stdout) as {
      free: number;
      outcome: string;
      osCode?: string;
      rolledBack?: boolean;
      then: string;
      now: string;
    }[];
    expect(rounds).toHaveLength(31);
    for (const round of rounds) {
      const seen = JSON.stringify(round);
      if (round.outcome === "restored 20") expect([round.then, round.now], seen).toEqual(["before", "before"]);
      else if (round.outcome === "STORAGE_FAILED") {
        expect(round.osCode, seen).toBe("EMFILE");
        expect([round.then, round.now], seen).toEqual(["edited", "edited"]);
      } else {
        expect(round.outcome, seen).toBe("REWIND_FAILED");
        if (round.rolledBack) expect(round.then, seen).toBe("edited");
        expect(round.now, seen).toBe("edited"); // a rewind its caller saw fail is never applied later
      }
    }
    // Both ways were met: some rounds had too few descriptors, and the last ones enough.
    expect(rounds.some((round) => round.outcome !== "restored 20")).toBe(true);
    expect(rounds.at(-1)?.outcome).toBe("restored 20");
  }, 120_000);
});
