// `npm run test:soak`: the loops and property tests that take their counts from rounds() (test/helpers/rounds.ts),
// at their soak counts, once. Only those files: the other tests do the same thing at any count, and `npm test`
// has run them already.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

function testFiles(folder) {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

const loops = testFiles("test").filter((path) => readFileSync(path, "utf8").includes("helpers/rounds.js"));
console.log(`soak: ${loops.length} files that take their counts from rounds()`);
const run = spawnSync("npx", ["vitest", "run", ...process.argv.slice(2), ...loops], {
  stdio: "inherit",
  env: { ...process.env, AGENT_TAPE_SOAK: "1" },
});
process.exit(run.status ?? 1);
