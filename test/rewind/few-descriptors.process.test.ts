import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { childCommand } from "../helpers/children.js";
import { tempDir } from "../helpers/fixture.js";

// A process allowed few descriptors (`prlimit`: 200, soft and hard) rewinds 300 files, each in a folder of its own.
// One operation keeps the folders it opens, up to a share of the descriptor limit (src/checkpoint/folder-budget.ts);
// a share fixed at 256 whatever the limit took every descriptor: the plan could then read none of the files, and
// the rewind was refused, each path "cannot be compared now (unreadable)", with nothing wrong in the workspace.

async function rewindWithDescriptors(limit: number, files: number): Promise<{ code: number; out: string }> {
  const dir = await tempDir("agent-tape-few-descriptors-");
  const [node, ...args] = childCommand("rewind-traced.ts", [dir, String(files), "1"]);
  const child = spawn("prlimit", [`--nofile=${limit}:${limit}`, "--", node!, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (out += text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => (out += text));
  const [code] = (await once(child, "close")) as [number];
  return { code, out };
}

describe("a process with few descriptors", () => {
  it("rewinds 300 files in 300 folders with 200 descriptors: every file restored", async () => {
    const { code, out } = await rewindWithDescriptors(200, 300);
    expect(code, out.slice(0, 2000)).toBe(0);
    expect(JSON.parse(out.trim())).toEqual({ filesRestored: 300, intact: true });
  }, 120_000);

  it("out of descriptors: rewound whole, nothing changed, or rolled back by the next writer (31 rounds)", async () => {
    // Each round takes up all but 0 to 60 descriptors before a 20-file rewind. Out of them, the plan's reads fail
    // (STORAGE_FAILED, EMFILE: nothing changed yet), or the restore's (REWIND_FAILED; a roll-back that cannot open
    // what it needs either is left to the next writer, which rolls it back): never a workspace left half rewound.
    const root = await tempDir("agent-tape-rewind-fds-");
    const { stdout } = await promisify(execFile)(
      "bash",
      ["-c", 'ulimit -n 300 && exec "$0" "$@"', ...childCommand("rewind-few-descriptors.ts", [root])],
      { maxBuffer: 1 << 20 },
    );
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
