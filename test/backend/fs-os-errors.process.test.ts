import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { childCommand } from "../helpers/children.js";
import { tempDir } from "../helpers/fixture.js";

// Running out of file descriptors (EMFILE) is made for real, in a child started with a
// low `ulimit -n`: every failed append is STORAGE_FAILED with osCode EMFILE, none a raw error.

describe("a process out of file descriptors", () => {
  it("gets STORAGE_FAILED (EMFILE) from appends that cannot open their log, never raw (1 round)", async () => {
    const root = await tempDir();
    // Through bash, for `ulimit`, as list-many.process.test.ts does.
    const { stdout } = await promisify(execFile)(
      "bash",
      ["-c", 'ulimit -n 128 && exec "$0" "$@"', ...childCommand("open-many-sessions.ts", [root, "200"])],
      { maxBuffer: 1 << 20 },
    );
    const result = JSON.parse(stdout) as { codes: Record<string, number>; osCodes: string[]; ok: number };
    expect(Object.keys(result.codes)).toEqual(["STORAGE_FAILED"]);
    expect(result.osCodes).toEqual(["EMFILE"]);
    expect(result.ok + result.codes.STORAGE_FAILED!).toBe(200);
  }, 120_000);
});
