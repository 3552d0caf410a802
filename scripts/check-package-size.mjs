// Fails when the packed package passes its budget (600 KB): one copy of the library (the CLI, the conformance
// suite and the adapters import the package's own entry), ESM and CommonJS of what `require` can load, no source
// maps (tsup.config.ts says why). `npm run check:package` runs it after publint and attw.
import { execFileSync } from "node:child_process";

const BUDGET = 600 * 1000;

const [pack] = JSON.parse(
  execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { encoding: "utf8" }),
);
const kb = (bytes) => `${(bytes / 1000).toFixed(1)} KB`;
const summary = `${kb(pack.size)} packed, ${kb(pack.unpackedSize)} unpacked, ${pack.entryCount} files`;
if (pack.size > BUDGET) {
  const largest = [...pack.files].sort((a, b) => b.size - a.size).slice(0, 5);
  console.error(`The package is ${summary}: over its ${kb(BUDGET)} budget. Largest files:`);
  for (const file of largest) console.error(`  ${kb(file.size).padStart(10)}  ${file.path}`);
  process.exitCode = 1;
} else {
  console.log(`The package is ${summary} (budget ${kb(BUDGET)} packed).`);
}
