// The lines of every source file the lint scripts check (src, test, bench, examples, scripts; bench/results
// left out), for check-line-length.mjs and check-pointers.mjs.
import { readdir, readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repository = fileURLToPath(new URL("..", import.meta.url));
export const folders = ["src", "test", "bench", "examples", "scripts"];
const extensions = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"]);

async function* sourceFiles(folder, skipped) {
  for (const entry of await readdir(join(repository, folder), { withFileTypes: true })) {
    const path = `${folder}/${entry.name}`;
    if (path === "bench/results" || skipped.has(path)) continue;
    if (entry.isDirectory()) yield* sourceFiles(path, skipped);
    else if (entry.isFile() && extensions.has(extname(entry.name))) yield path;
  }
}

/** Each line of each source file (but the `skipped` paths), with its path and 1-based number. */
export async function* sourceLines(skipped = new Set()) {
  for (const folder of folders)
    for await (const path of sourceFiles(folder, skipped)) {
      const lines = (await readFile(join(repository, path), "utf8")).split("\n");
      for (let i = 0; i < lines.length; i++) yield { path, number: i + 1, line: lines[i] };
    }
}
