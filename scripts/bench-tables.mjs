// Writes the benchmark tables of docs/benchmarks.md from the results files `npm run bench` leaves in bench/results/
// (each holds its table, and the machine, Node version, date and every sample behind it), between the markers
// <!-- bench-table: <file> --> and <!-- /bench-table -->. `--check` changes nothing and fails when the doc's
// tables differ from the results: a figure in the docs is always one a results file holds.
import { readFileSync, writeFileSync } from "node:fs";

const DOC = "docs/benchmarks.md";
const check = process.argv.includes("--check");

const doc = readFileSync(DOC, "utf8");
const marker = /<!-- bench-table: ([\w.-]+) -->\n[\s\S]*?<!-- \/bench-table -->/g;
let count = 0;
const generated = doc.replace(marker, (_, file) => {
  count += 1;
  const results = JSON.parse(readFileSync(`bench/results/${file}`, "utf8"));
  const { node, cpus, cpuModel } = results.machine;
  const machine = `\`${results.command}\` on ${cpus} × ${cpuModel}, Node ${node}; every sample is in`;
  return [
    `<!-- bench-table: ${file} -->`,
    results.table.trimEnd(),
    "",
    `${machine} [bench/results/${file}](../bench/results/${file}).`,
    "<!-- /bench-table -->",
  ].join("\n");
});

if (count === 0) {
  console.error(`${DOC} has no <!-- bench-table: <file> --> marker.`);
  process.exitCode = 1;
} else if (check) {
  if (generated !== doc) {
    console.error(`${DOC}: the benchmark tables differ from bench/results/. Run: node scripts/bench-tables.mjs`);
    process.exitCode = 1;
  } else console.log(`${DOC}: ${count} benchmark table(s) match bench/results/.`);
} else {
  writeFileSync(DOC, generated);
  console.log(`${DOC}: ${count} benchmark table(s) written from bench/results/.`);
}
