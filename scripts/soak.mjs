// `npm run test:soak`: the loops and property tests that take their counts from rounds() (test/helpers/rounds.ts),
// at their soak counts, once. Only those files: the other tests do the same thing at any count.
// `node scripts/soak.mjs --others` runs every other file, as `npm test` does (AGENT_TAPE_WITHOUT_LOOPS=1, read by
// vitest.config.ts): CI runs that, then the soak run; together they are `npm test` with the loops at their soak
// counts, and no file runs twice.
import { spawnSync } from "node:child_process";
import { loopFiles } from "./loop-files.mjs";

const loops = loopFiles();
const others = process.argv[2] === "--others";
const args = process.argv.slice(others ? 3 : 2);
let run;
if (others) {
  console.log(`npm test without the ${loops.length} files that take their counts from rounds()`);
  const env = { ...process.env, AGENT_TAPE_WITHOUT_LOOPS: "1" };
  run = spawnSync("npx", ["vitest", "run", ...args], { stdio: "inherit", env });
} else {
  console.log(`soak: ${loops.length} files that take their counts from rounds()`);
  const env = { ...process.env, AGENT_TAPE_SOAK: "1" };
  run = spawnSync("npx", ["vitest", "run", ...args, ...loops], { stdio: "inherit", env });
}
process.exit(run.status ?? 1);
