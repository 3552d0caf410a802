// A figure in a comment of src/ points at the benchmark row that shows it, as `bench "<row name>"` (the
// row's `suite` in bench/*.ts, with its sizes filled in), or at a section of docs/ARCHITECTURE.md. For
// check-pointers.mjs: the rows a src/ comment names that no benchmark makes, and the measured figures
// (a time, a ratio, a "~" estimate) in src/ comments with no pointer in their comment.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sourceLines } from "./source-lines.mjs";

const repository = fileURLToPath(new URL("..", import.meta.url));
const named = /\bbench "([^"]+)"/g;
const figure = /~\s?\d|\d\s?(?:ms|µs)\b|\d(?:\.\d+)?x\b/;
const pointer = /\bbench "|bench\/[\w.-]+\.(?:ts|mjs)\b|docs\/ARCHITECTURE\.md/;
const comment = /^\s*(?:\/\/|\/\*\*?|\*)/;

let rowsRead;
const benchRows = () => {
  rowsRead ??= readBenchRows();
  return rowsRead;
};

/** Each row name in bench/*.ts as a pattern: a template's `${…}` parts match any text. */
async function readBenchRows() {
  const rows = [];
  for (const name of await readdir(join(repository, "bench"))) {
    if (!/\.(?:ts|mjs)$/.test(name)) continue;
    const source = await readFile(join(repository, "bench", name), "utf8");
    for (const [, quoted, template] of source.matchAll(/(?:\bsuite: |\bsuite = |Row\()(?:"([^"]+)"|`([^`]+)`)/g)) {
      const parts = (quoted ?? template).split(/\$\{[^}]*\}/).map((p) => p.replace(/[.*+?^$()|[\]\\{}]/g, "\\$&"));
      rows.push(new RegExp(`^${parts.join(".+")}$`));
    }
  }
  return rows;
}

/**
 * The faults in the comments of one file of src/ (its `lines`, each `{ number, line }`): a row name no benchmark
 * makes, or a figure whose comment (the run of comment lines it is in) has no pointer.
 */
export async function benchPointerFaults(lines) {
  const rows = await benchRows();
  const faults = [];
  let block = [];
  const closeBlock = () => {
    if (block.length === 0) return;
    const text = block.map(({ line }) => line.replace(comment, "").trim()).join(" ");
    const at = block[0];
    for (const [, row] of text.matchAll(named))
      if (!rows.some((pattern) => pattern.test(row))) faults.push({ ...at, why: `no bench row "${row}"` });
    if (!pointer.test(text))
      for (const { number, line } of block)
        if (figure.test(line)) faults.push({ number, line, why: "a figure with no bench row or docs pointer" });
    block = [];
  };
  for (const { number, line } of lines) {
    if (comment.test(line)) block.push({ number, line });
    else closeBlock();
  }
  closeBlock();
  return faults;
}

/** Prints each fault in src/ and fails the run (exit code 1) if there is one. */
export async function checkBenchPointers() {
  const files = new Map();
  for await (const { path, number, line } of sourceLines())
    if (path.startsWith("src/")) files.set(path, [...(files.get(path) ?? []), { number, line }]);
  const found = [];
  for (const [path, lines] of files)
    for (const { number, line, why } of await benchPointerFaults(lines))
      found.push(`${path}:${number}: ${why}: ${line.trim()}`);
  if (found.length > 0) {
    console.error(`Figures in src/ comments without the benchmark row that shows them:\n  ${found.join("\n  ")}`);
    process.exitCode = 1;
  } else console.log("Every figure in a src/ comment points at a benchmark row or docs/ARCHITECTURE.md.");
}
