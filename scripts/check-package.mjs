// `npm run check:package` (after `npm run build`): the package as npm would publish it. publint checks its
// package.json against its files; @arethetypeswrong/cli checks that every entry's types resolve as its code does,
// for Node 16+ (ESM and CommonJS) and bundlers; and the packed size stays within its budget (600 KB): one copy of
// the library (the CLI, the conformance suite and the adapters import the package's own entry), ESM and CommonJS
// of what `require` can load, no source maps (tsup.config.ts says why).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const BUDGET = 600 * 1000;
const run = (command, args) => execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });

console.log(run("npx", ["publint"]).trim());

// Packed once, without scripts (the build is current): attw reads that very tarball.
const folder = mkdtempSync(join(tmpdir(), "agent-tape-pack-"));
try {
  const [pack] = JSON.parse(run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", folder]));
  const tarball = join(folder, pack.filename);
  // Every entry for Node 16+ (ESM and CommonJS) and bundlers, but the conformance suite: it registers vitest tests,
  // so it is ESM only (no `require` condition) and is checked for ESM alone.
  const attw = (...args) =>
    console.log(run("npx", ["attw", tarball, "--no-color", "--format", "table-flipped", ...args]));
  attw("--profile", "node16", "--exclude-entrypoints", "./testing");
  attw("--profile", "esm-only", "--entrypoints", "./testing");
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
} finally {
  rmSync(folder, { recursive: true, force: true });
}
