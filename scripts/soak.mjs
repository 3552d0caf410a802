// `npm run test:soak`: the loops and property tests that take their counts from rounds() (test/helpers/rounds.ts),
// at their soak counts, once, and the soak tier's files (*.soak.test.ts), which only this run and CI's define.
// Only those files: the other tests do the same thing at any count. (CI runs the whole
// suite with AGENT_TAPE_SOAK=1 instead, every file once.)
import { spawnSync } from "node:child_process";
import { loopFiles, soakFiles } from "./loop-files.mjs";

const loops = [...new Set([...loopFiles(), ...soakFiles()])];
console.log(`soak: ${loops.length} files that take their counts from rounds() or run only when soaking`);
const env = { ...process.env, AGENT_TAPE_SOAK: "1" };
const run = spawnSync("npx", ["vitest", "run", ...process.argv.slice(2), ...loops], { stdio: "inherit", env });
process.exit(run.status ?? 1);
