// Fails when a source line is longer than 120 characters. Biome wraps code at 120 but leaves long strings
// and comments alone, so this catches what it cannot. `npm run lint` runs it.
import { readdir, readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";

const MAX = 120;
const repository = fileURLToPath(new URL("..", import.meta.url));
const folders = ["src", "test", "bench", "examples", "scripts"];
const extensions = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"]);
const skipped = new Set(["bench/results"]);

async function* sourceFiles(folder) {
  for (const entry of await readdir(join(repository, folder), { withFileTypes: true })) {
    const path = `${folder}/${entry.name}`;
    if (skipped.has(path)) continue;
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.isFile() && extensions.has(extname(entry.name))) yield path;
  }
}

const tooLong = [];
for (const folder of folders) {
  for await (const path of sourceFiles(folder)) {
    const lines = (await readFile(join(repository, path), "utf8")).split("\n");
    lines.forEach((line, i) => {
      // Characters as a reader counts them (code points), not UTF-16 units: "é" and "→" are one each.
      const length = [...line].length;
      if (length > MAX) tooLong.push(`${path}:${i + 1}: ${length}`);
    });
  }
}

if (tooLong.length > 0) {
  console.error(`Lines longer than ${MAX} characters (rewrap them by hand):\n  ${tooLong.join("\n  ")}`);
  process.exitCode = 1;
} else {
  console.log(`No line over ${MAX} characters in ${folders.join("/, ")}/.`);
}
