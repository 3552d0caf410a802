import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, expect, it } from "vitest";
import { TempRoots } from "../helpers/temp-root.js";
import { seedSession } from "./harness.js";

const temps = new TempRoots();
afterEach(() => temps.removeAll());

const repo = fileURLToPath(new URL("../../", import.meta.url));

it("the real entry point runs as a program: `node --import tsx src/cli/main.ts list` prints the sessions", async () => {
  const { root, id } = await seedSession(temps);
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
