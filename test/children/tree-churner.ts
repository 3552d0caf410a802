// Child process for the watched-scan race test: changes a workspace at random, as a background job
// (a dev server, a watcher, a build) would while an agent runs commands: writes, appends, deletes,
// renames of files and folders, new folders with files in them, mode changes. Prints "churning" once
// started. A line "pause" on stdin stops it until a line "go" (it answers every "pause" with
// "paused <changes>" once still); when stdin ends it prints "stopped <changes>" and exits.
// argv: workspace seed
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [workspace, seedText] = process.argv.slice(2);
if (!workspace || !seedText) throw new Error("usage: tree-churner workspace seed");
let seed = Number(seedText);
// A small deterministic generator: a failing round can be run again with its seed.
// (mulberry32: the low bits of a plain LCG repeat with a short period, which made the choices a fixed cycle)
const random = (n: number) => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
};
const FOLDERS = ["d0", "d1", "d2", "d1/e", "d2/e/f"];
const pick = <T>(items: readonly T[]) => items[random(items.length)]!;
const file = () => `${pick(FOLDERS)}/c${random(8)}.txt`;

let stop = false;
let paused = false;
let answers = 0;
let told = "";
process.stdin
  .setEncoding("utf8")
  .on("data", (text: string) => {
    told += text;
    const lines = told.split("\n");
    told = lines.pop() ?? "";
    for (const line of lines) {
      if (line === "pause") answers++;
      paused = line === "pause" ? true : line === "go" ? false : paused;
    }
  })
  .on("end", () => (stop = true));
let changes = 0;

function once(): void {
  const choice = random(8);
  try {
    if (choice <= 2) writeFileSync(join(workspace!, file()), `churn ${changes}\n`, { flag: random(2) ? "w" : "a" });
    else if (choice === 3) rmSync(join(workspace!, file()), { force: true });
    else if (choice === 4) renameSync(join(workspace!, file()), join(workspace!, file()));
    else if (choice === 5) {
      const folder = join(workspace!, pick(FOLDERS), `new${random(3)}`);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, "inside.txt"), `made ${changes}\n`);
    } else if (choice === 6) {
      const parent = join(workspace!, pick(FOLDERS));
      const made = readdirSync(parent).filter((name) => name.startsWith("new"));
      if (made.length > 0) {
        const folder = join(parent, pick(made));
        if (random(2)) rmSync(folder, { recursive: true, force: true });
        else renameSync(folder, join(workspace!, pick(FOLDERS), `new${random(3)}`));
      }
    } else chmodSync(join(workspace!, file()), random(2) ? 0o755 : 0o644);
    changes++;
  } catch {
    // A path the last change took away, or a rename onto a folder: the next change goes on.
  }
}

process.stdout.write("churning\n");
const pause = new Int32Array(new SharedArrayBuffer(4));
while (!stop) {
  // Between two batches of changes: still, so every "pause" asked so far is answered.
  for (; answers > 0; answers--) process.stdout.write(`paused ${changes}\n`);
  if (paused) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    continue;
  }
  for (let i = 0; i < 4; i++) once();
  Atomics.wait(pause, 0, 0, 1);
  await new Promise((resolve) => setImmediate(resolve));
}
process.stdout.write(`stopped ${changes}\n`);
