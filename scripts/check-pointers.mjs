// Fails when a comment or test name in the code points outside the repository: to a design file that is not in
// it (DESIGN.md) or to an issue of the tracker ("issue 13"). Point to docs/ARCHITECTURE.md instead; it says why.
// It also holds README.md and docs/*.md to what a reader needs: no issue numbers, and no history of how a figure
// came about (the date or load of a run, "a later run", "this session"); a figure's source is its results file or
// its test. Text inside fenced code blocks (real output, with its timestamps) is not prose and is left alone.
// `npm run lint` runs it.
import { readdirSync, readFileSync } from "node:fs";
import { checkBenchPointers } from "./bench-pointers.mjs";
import { folders, sourceLines } from "./source-lines.mjs";

const outside = /\bDESIGN\.md\b|\bissue #?\d+/i;
const runHistory = new RegExp(
  [
    String.raw`\bload (average )?(of )?\d`, // a run's load
    String.raw`\b\d{1,2}:\d{2}(–\d{1,2}:\d{2})? UTC\b`, // its hour
    String.raw`\b20\d\d-\d\d-\d\d\b`, // its date
    String.raw`\bthis session\b|\b(a|an) (later|earlier) (run|session)\b|\bbusier machine\b|\bquiet run\b`,
  ].join("|"),
  "i",
);

const found = [];
for await (const { path, number, line } of sourceLines(new Set(["scripts/check-pointers.mjs"])))
  if (outside.test(line)) found.push(`${path}:${number}: ${line.trim()}`);

const history = [];
const docs = [
  "README.md",
  ...readdirSync("docs")
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];
for (const path of docs) {
  // ARCHITECTURE.md is the design record: its issue pointers are checked, its history is its own.
  const checksHistory = path !== "docs/ARCHITECTURE.md";
  let fenced = false;
  readFileSync(path, "utf8")
    .split("\n")
    .forEach((line, i) => {
      if (line.trimStart().startsWith("```")) fenced = !fenced;
      if (fenced) return;
      if (/\bissue #?\d+/i.test(line)) found.push(`${path}:${i + 1}: ${line.trim()}`);
      else if (checksHistory && runHistory.test(line)) history.push(`${path}:${i + 1}: ${line.trim()}`);
    });
}

if (found.length > 0) {
  console.error(`Pointers outside the repository (point to docs/ARCHITECTURE.md):\n  ${found.join("\n  ")}`);
  process.exitCode = 1;
}
if (history.length > 0) {
  console.error(
    `Run history in the documentation (say what is true; figures come from bench/results):\n  ${history.join("\n  ")}`,
  );
  process.exitCode = 1;
}
if (found.length === 0 && history.length === 0)
  console.log(`No pointer outside the repository in ${folders.join("/, ")}/; no run history in README.md, docs/.`);

// A figure in a src/ comment points at the benchmark row that shows it, or at docs/ARCHITECTURE.md.
await checkBenchPointers();
