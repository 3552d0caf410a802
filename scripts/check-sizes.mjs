// Fails when a file in src/ is longer than 500 lines or a function body (declaration, method, accessor,
// constructor, arrow or function expression) longer than 80: one idea per file, one step per function
// (docs/ARCHITECTURE.md, "Layers"). `npm run lint` runs it; `--list` prints every file and function with its size.
import { readdir, readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const MAX_FILE_LINES = 500;
const MAX_FUNCTION_LINES = 80;
const repository = fileURLToPath(new URL("..", import.meta.url));

async function* sourceFiles(folder) {
  for (const entry of await readdir(join(repository, folder), { withFileTypes: true })) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.isFile() && extname(entry.name) === ".ts") yield path;
  }
}

/**
 * The name a reader finds a function by: its own, its variable's or property's, its class and method; a callback
 * is named by the call it is passed to. Nested functions carry their outer function's name first, so a name stays
 * the same when lines above it move.
 */
function ownName(node) {
  if (ts.isConstructorDeclaration(node)) return "constructor";
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText();
  if (ts.isCallExpression(parent)) {
    const callee = parent.expression;
    return `${ts.isPropertyAccessExpression(callee) ? callee.name.text : callee.getText()}(…) callback`;
  }
  return "(anonymous)";
}

function nameOf(node, outer) {
  const owner = ts.isClassLike(node.parent) ? `${node.parent.name?.text ?? "(class)"}.` : "";
  return `${outer ? `${outer} > ` : ""}${owner}${ownName(node)}`;
}

function* functionsIn(source) {
  const lineOf = (position) => source.getLineAndCharacterOfPosition(position).line;
  const visit = function* (node, outer) {
    let inner = outer;
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      inner = nameOf(node, outer);
      const lines = lineOf(node.body.getEnd()) - lineOf(node.body.getStart(source)) + 1;
      yield { name: inner, line: lineOf(node.getStart(source)) + 1, lines };
    }
    for (const child of node.getChildren(source)) yield* visit(child, inner);
  };
  yield* visit(source, undefined);
}

const list = process.argv.includes("--list");
const files = [];
const functions = [];
for await (const path of sourceFiles("src")) {
  const text = await readFile(join(repository, path), "utf8");
  const lines = text.endsWith("\n") ? text.split("\n").length - 1 : text.split("\n").length;
  files.push({ path, lines });
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  for (const fn of functionsIn(source)) functions.push({ ...fn, path });
}

if (list) {
  for (const { path, lines } of files.sort((a, b) => b.lines - a.lines)) console.log(`file ${lines} ${path}`);
  for (const { path, line, name, lines } of functions.sort((a, b) => b.lines - a.lines))
    console.log(`function ${lines} ${path}:${line} ${name}`);
} else {
  const tooLong = [
    ...files
      .filter((f) => f.lines > MAX_FILE_LINES)
      .map((f) => `${f.path}: ${f.lines} lines (at most ${MAX_FILE_LINES})`),
    ...functions
      .filter((f) => f.lines > MAX_FUNCTION_LINES)
      .map((f) => `${f.path}:${f.line} ${f.name}: ${f.lines} lines (at most ${MAX_FUNCTION_LINES})`),
  ];
  if (tooLong.length > 0) {
    console.error(`Too long (split by idea or step, each with its name):\n  ${tooLong.join("\n  ")}`);
    process.exitCode = 1;
  } else {
    console.log(
      `No file in src/ over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES} ` +
        `(${files.length} files, ${functions.length} functions).`,
    );
  }
}
