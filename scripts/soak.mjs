// `npm run test:soak`: the loops and property tests that take their counts from rounds() (test/helpers/rounds.ts),
// at their soak counts, once. Only those files: the other tests do the same thing at any count. (CI runs the whole
// suite with AGENT_TAPE_SOAK=1 instead, every file once.)
import { spawnSync } from "node:child_process";
import { loopFiles } from "./loop-files.mjs";

const loops = loopFiles();
console.log(`soak: ${loops.length} files that take their counts from rounds()`);
const env = { ...process.env, AGENT_TAPE_SOAK: "1" };
const run = spawnSync("npx", ["vitest", "run", ...process.argv.slice(2), ...loops], { stdio: "inherit", env });
process.exit(run.status ?? 1);
