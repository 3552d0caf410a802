// Fails when a comment or test name in the code points outside the repository: to a design file that is not in
// it (DESIGN.md) or to an issue of the tracker ("issue 13"). Point to docs/ARCHITECTURE.md instead; it says why.
// `npm run lint` runs it.
import { readdir, readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repository = fileURLToPath(new URL("..", import.meta.url));
const folders = ["src", "test", "bench", "examples", "scripts"];
const extensions = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"]);
const outside = /\bDESIGN\.md\b|\bissue #?\d+/i;

async function* sourceFiles(folder) {
  for (const entry of await readdir(join(repository, folder), { withFileTypes: true })) {
    const path = `${folder}/${entry.name}`;
    if (path === "bench/results" || path === "scripts/check-pointers.mjs") continue;
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.isFile() && extensions.has(extname(entry.name))) yield path;
  }
}

const found = [];
for (const folder of folders) {
  for await (const path of sourceFiles(folder)) {
    const lines = (await readFile(join(repository, path), "utf8")).split("\n");
    lines.forEach((line, i) => {
      if (outside.test(line)) found.push(`${path}:${i + 1}: ${line.trim()}`);
    });
  }
}

if (found.length > 0) {
  console.error(`Pointers outside the repository (point to docs/ARCHITECTURE.md):\n  ${found.join("\n  ")}`);
  process.exitCode = 1;
} else {
  console.log(`No pointer outside the repository in ${folders.join("/, ")}/.`);
}
