// Fails when a source line is longer than 120 characters. Biome wraps code at 120 but leaves long strings
// and comments alone, so this catches what it cannot. `npm run lint` runs it.
import { folders, sourceLines } from "./source-lines.mjs";

const MAX = 120;

const tooLong = [];
for await (const { path, number, line } of sourceLines()) {
  // Characters as a reader counts them (code points), not UTF-16 units: "é" and "→" are one each.
  const length = [...line].length;
  if (length > MAX) tooLong.push(`${path}:${number}: ${length}`);
}

if (tooLong.length > 0) {
  console.error(`Lines longer than ${MAX} characters (rewrap them by hand):\n  ${tooLong.join("\n  ")}`);
  process.exitCode = 1;
} else {
  console.log(`No line over ${MAX} characters in ${folders.join("/, ")}/.`);
}
