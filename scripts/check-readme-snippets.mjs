// Fails when a README code block that says where it comes from (`<!-- from examples/<file> -->` on the line
// before it) differs from the `// #region readme` part of that file, which the examples test runs. Imports are
// compared as a user writes them: "../src/index.js" is "agent-tape", "../src/adapters/x/index.js" is "agent-tape/x".
import { readFileSync } from "node:fs";

const asUserWrites = (code) =>
  code
    .replace(/"\.\.\/src\/index\.js"/g, '"agent-tape"')
    .replace(/"\.\.\/src\/adapters\/([\w-]+)\/index\.js"/g, '"agent-tape/$1"')
    .trim();

const readme = readFileSync("README.md", "utf8");
const blocks = [...readme.matchAll(/<!-- from (examples\/[\w.-]+) -->\n```ts\n([\s\S]*?)```/g)];
const problems = [];
for (const [, file, block] of blocks) {
  const region = /\/\/ #region readme\n([\s\S]*?)\/\/ #endregion readme/.exec(readFileSync(file, "utf8"));
  if (!region) problems.push(`${file} has no "// #region readme" part`);
  else if (asUserWrites(region[1]) !== block.trim()) problems.push(`README.md's block from ${file} differs from it`);
}
if (blocks.length === 0) problems.push("README.md has no block marked <!-- from examples/<file> -->");
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exitCode = 1;
} else console.log(`README.md: ${blocks.length} code block(s) equal the example files they come from.`);
