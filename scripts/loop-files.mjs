// The test files whose loops take their counts from rounds() (test/helpers/rounds.ts): what `npm run test:soak` runs
// at their soak counts.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

function testFiles(folder) {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** Paths from the repository's root, as vitest globs them. */
export function loopFiles() {
  return testFiles("test").filter((path) => readFileSync(path, "utf8").includes("helpers/rounds.js"));
}

/** The files only the soak run runs: vitest.config.ts defines their projects only when AGENT_TAPE_SOAK=1. */
export function soakFiles() {
  return testFiles("test").filter((path) => /\.soak\.test\.ts$|\/postgres-[^/]*-suites\.test\.ts$/.test(path));
}
