import { execFile, spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { seedSession } from "./harness.js";

const repo = fileURLToPath(new URL("../../", import.meta.url));

it("the real entry point runs as a program: `node --import tsx src/cli/main.ts list` prints the sessions", async () => {
  const { root, id } = await seedSession();
  // tsup keeps the entry's first line, so this is what makes dist/cli/main.js runnable as a bin.
  expect((await readFile(new URL("../../src/cli/main.ts", import.meta.url), "utf8")).split("\n", 1)[0]).toBe(
    "#!/usr/bin/env node",
  );
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "src/cli/main.ts", "list", "--root", root],
    {
      cwd: repo,
    },
  );
  expect(stderr).toBe("");
  expect(stdout.split("\n")[0]).toMatch(/^ID\s+TITLE\s+LAST #\s+LAST ACTIVITY\s+SIZE$/);
  expect(stdout).toContain(id);
});

/**
 * The entry point's own question (readline on stdin, asked only when stdin is a terminal), under a real
 * terminal: script(1) runs the CLI on a pseudo-terminal and passes what this test writes to its input.
 */
async function atTerminal(args: readonly string[], typed: string): Promise<{ code: number; output: string }> {
  const command = [process.execPath, "--import", "tsx", "src/cli/main.ts", ...args].map((a) => `'${a}'`).join(" ");
  const child = spawn("script", ["-qec", command, "/dev/null"], { cwd: repo, stdio: ["pipe", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stdin.end(typed);
  const code = await new Promise<number>((resolve) => child.on("close", (c) => resolve(c ?? -1)));
  return { code, output };
}

describe("agent-tape rewind run as a program: a conflict", () => {
  async function handEdited() {
    const seeded = await seedSession({ afterState: true });
    await writeFile(join(seeded.workspace, "a.txt"), "two + typed by hand\n");
    return { ...seeded, read: () => readFile(join(seeded.workspace, "a.txt"), "utf8") };
  }

  it("at a real terminal asks before overwriting: 'n' changes nothing, 'y' overwrites", async () => {
    const t = await handEdited();
    const no = await atTerminal(["rewind", t.id, "--to", "2", "--root", t.root], "n\n");
    expect(no.output).toContain("a.txt  modified");
    expect(no.output).toMatch(/Overwrite it\? The current bytes go into the undo\. \[y\/N\]/);
    expect(no.code).toBe(1);
    expect(await t.read()).toBe("two + typed by hand\n");

    const yes = await atTerminal(["rewind", t.id, "--to", "2", "--root", t.root], "y\n");
    expect(yes.output).toMatch(/\[y\/N\]/);
    expect(yes.code, yes.output).toBe(0);
    expect(await t.read()).toBe("one\n");
  }, 60_000);

  it("with stdin piped never asks: refuses REWIND_CONFLICT, or overwrites with --on-conflict overwrite", async () => {
    const t = await handEdited();
    const run = (extra: string[]) =>
      promisify(execFile)(process.execPath, ["--import", "tsx", "src/cli/main.ts", "rewind", t.id, ...extra], {
        cwd: repo,
      }).then(
        (done) => ({ code: 0, ...done }),
        (failed: { code: number; stdout: string; stderr: string }) => failed,
      );
    const refused = await run(["--to", "2", "--root", t.root]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("(REWIND_CONFLICT)");
    expect(refused.stderr).not.toContain("[y/N]");
    expect(await t.read()).toBe("two + typed by hand\n");
    const overwritten = await run(["--to", "2", "--on-conflict", "overwrite", "--root", t.root]);
    expect(overwritten.code, overwritten.stderr).toBe(0);
    expect(await t.read()).toBe("one\n");
  }, 60_000);
});
