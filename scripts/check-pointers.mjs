// Fails when a comment or test name in the code points outside the repository: to a design file that is not in
// it (DESIGN.md) or to an issue of the tracker ("issue 13"). Point to docs/ARCHITECTURE.md instead; it says why.
// `npm run lint` runs it.
import { checkBenchPointers } from "./bench-pointers.mjs";
import { folders, sourceLines } from "./source-lines.mjs";

const outside = /\bDESIGN\.md\b|\bissue #?\d+/i;

const found = [];
for await (const { path, number, line } of sourceLines(new Set(["scripts/check-pointers.mjs"])))
  if (outside.test(line)) found.push(`${path}:${number}: ${line.trim()}`);

if (found.length > 0) {
  console.error(`Pointers outside the repository (point to docs/ARCHITECTURE.md):\n  ${found.join("\n  ")}`);
  process.exitCode = 1;
} else {
  console.log(`No pointer outside the repository in ${folders.join("/, ")}/.`);
}

// A figure in a src/ comment points at the benchmark row that shows it, or at docs/ARCHITECTURE.md.
await checkBenchPointers();
