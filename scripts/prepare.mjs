// `npm run prepare`, which npm runs on `npm install`/`npm ci` in this folder, on `npm pack`, and when the package
// is installed from a git URL or a path: builds dist/ unless it is already newer than everything it is built from.
// A fresh clone has no dist/ and builds; an `npm ci` in a working copy whose build is current skips the ~20 s.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

// What a build leaves; the oldest of them dates the build (a build that failed half way leaves some missing).
const outputs = ["dist/index.js", "dist/index.cjs", "dist/index.d.ts", "dist/index.d.cts", "dist/cli/main.js"];
const sources = ["src", "package.json", "tsup.config.ts", "tsconfig.json"];

function newestMtime(path) {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)));
  return newest;
}

const built = Math.min(...outputs.map((path) => (existsSync(path) ? statSync(path).mtimeMs : 0)));
const changed = Math.max(...sources.filter((path) => existsSync(path)).map(newestMtime));
if (built > changed) {
  console.log("prepare: dist/ is current, not rebuilding (npm run build forces it)");
} else {
  const run = spawnSync("npx", ["tsup"], { stdio: "inherit" });
  process.exit(run.status ?? 1);
}
