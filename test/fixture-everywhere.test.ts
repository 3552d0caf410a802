// Every test file that makes a temp folder or opens a store does it through test/helpers/fixture.ts, which
// closes the store and removes the folder when the test finishes, passed or failed. This keeps it so: a file
// that calls mkdtemp or `new SessionStore` itself fails here, unless it is one of the exceptions below.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const TEST_ROOT = fileURLToPath(new URL(".", import.meta.url));

/** Files that may make their own, each with the reason. */
const EXCEPTIONS: Record<string, string> = {
  "helpers/fixture.ts": "the fixture itself",
  "fixture-everywhere.test.ts": "this file, which names what it looks for",
  "package/pack.process.test.ts":
    "one install for the whole file, made in beforeAll where no test runs; its code strings run in that install",
  "docs/guide-blocks.slow.test.ts":
    "one folder for the whole file, made in beforeAll: the guide's blocks run in order on it",
  "docs/readme-blocks.slow.test.ts": "one folder for the whole file, made in beforeAll: the README's blocks run on it",
  "backend/fs-big-batch-memory.soak.test.ts":
    "one 300,000-event baseline log for the whole file, made in beforeAll: both memory tests read it",
  "docs/postgres-readme-block.test.ts": "one folder for the whole file, made in beforeAll, where its block runs",
  "checkpoint/workspace-index/index-records.test.ts":
    "its workspaces made once in beforeAll and left past the racy window, one renamed into each test's own folder",
  "setup/postgres-server.ts": "vitest globalSetup: the server's data folder lives for the whole run, outside any test",
};
/** Folders of child scripts: run by a test as other processes, not vitest files; the test owns their root. */
const CHILD_FOLDERS = ["children/"];

/** What only the fixture may do: make a temp folder, or open a store without it being closed after. */
const FORBIDDEN: readonly { what: string; pattern: RegExp }[] = [
  { what: "mkdtemp (use tempDir)", pattern: /\bmkdtemp(Sync)?\b/ },
  { what: "new SessionStore (use openStore or tempStore)", pattern: /\bnew (\w+\.)?SessionStore\b/ },
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** `file: what` for each forbidden use in `text` outside comments and string literals. */
function offences(file: string, text: string): string[] {
  const code = text
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/\/\/.*$/gm, "")
    .replace(/"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g, '""');
  return FORBIDDEN.filter(({ pattern }) => pattern.test(code)).map(({ what }) => `${file}: ${what}`);
}

describe("the test fixture", () => {
  it("is how every test file makes temp folders and stores (exceptions listed with their reasons)", () => {
    const found = sourceFiles(TEST_ROOT)
      .map((path) => relative(TEST_ROOT, path))
      .filter((file) => !(file in EXCEPTIONS) && !CHILD_FOLDERS.some((folder) => file.startsWith(folder)))
      .flatMap((file) => offences(file, readFileSync(join(TEST_ROOT, file), "utf8")));
    expect(found).toEqual([]);
  });

  it("tells each forbidden use from the same words in comments and strings", () => {
    expect(offences("a.test.ts", 'const root = await mkdtemp(join(tmpdir(), "x"));')).toEqual([
      "a.test.ts: mkdtemp (use tempDir)",
    ]);
    expect(offences("b.test.ts", "const store = new SessionStore({ root });")).toEqual([
      "b.test.ts: new SessionStore (use openStore or tempStore)",
    ]);
    expect(offences("d.test.ts", "const store = new entry.SessionStore({ backend });")).toEqual([
      "d.test.ts: new SessionStore (use openStore or tempStore)",
    ]);
    expect(offences("c.test.ts", '// new SessionStore\nexpect(m).toContain("new SessionStore({ root })");')).toEqual(
      [],
    );
  });

  it("lists only exceptions that still exist", () => {
    const files = new Set(sourceFiles(TEST_ROOT).map((path) => relative(TEST_ROOT, path)));
    for (const file of Object.keys(EXCEPTIONS)) expect(files.has(file), file).toBe(true);
  });
});
