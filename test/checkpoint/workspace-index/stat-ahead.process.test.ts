import { realpath } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { traceChild } from "../../helpers/syscalls.js";
import { tempDir } from "../../helpers/fixture.js";

// The stats a later scan takes ahead on helper threads (stat-ahead.ts) are taken by paths, so a folder that became
// a link since the last walk would lead them outside the workspace. strace, following every thread, says which
// paths were looked at.
describe("stats taken ahead (strace)", () => {
  it("never reach through a folder that became a link to a folder outside the workspace", async () => {
    const dir = await realpath(await tempDir("agent-tape-stat-ahead-"));
    const run = await traceChild("stat-ahead-traced.ts", [dir], ["statx", "newfstatat", "lstat"], dir, {
      fdPaths: true,
    });
    const { paths, statsAhead } = JSON.parse(run.stdout.trim()) as { paths: string[]; statsAhead: number };
    // The folder q/b held: its names were statted ahead. p is a link now, tracked as one, and nothing below it.
    expect(statsAhead).toBeGreaterThanOrEqual(20);
    expect(paths).toContain("p");
    expect(paths.filter((path) => path.startsWith("p/"))).toEqual([]);
    const through = run.lines.filter((line) => line.includes(`${join(dir, "ws", "p")}/`));
    expect(through).toEqual([]);
    expect(run.lines.some((line) => line.includes(join(dir, "ws", "q", "b", "f0.txt")))).toBe(true);
  });
});
