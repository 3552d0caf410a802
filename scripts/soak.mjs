// `npm run test:soak`: the loops and property tests that take their counts from rounds() (test/helpers/rounds.ts),
// at their soak counts, once. Only those files: the other tests do the same thing at any count, and `npm test`
// has run them already.
// `node scripts/soak.mjs --others` runs every other file, as `npm test` does: CI runs that and then the soak run,
// which together are `npm test` with the loops at their soak counts, no file run twice.
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
const others = process.argv[2] === "--others";
const args = process.argv.slice(others ? 3 : 2);
let run;
if (others) {
  console.log(`npm test without the ${loops.length} files that take their counts from rounds()`);
  const excluded = loops.flatMap((path) => ["--exclude", path]);
  run = spawnSync("npx", ["vitest", "run", ...args, ...excluded], { stdio: "inherit" });
} else {
  console.log(`soak: ${loops.length} files that take their counts from rounds()`);
  const env = { ...process.env, AGENT_TAPE_SOAK: "1" };
  run = spawnSync("npx", ["vitest", "run", ...args, ...loops], { stdio: "inherit", env });
}
process.exit(run.status ?? 1);
