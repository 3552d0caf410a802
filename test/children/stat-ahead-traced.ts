// Child process, run under strace by test/checkpoint/workspace-index/stat-ahead.process.test.ts: walks a workspace,
// then moves the folder `p` out of it and puts a link to it in its place, and walks again with the stats taken ahead
// on helper threads (stat-ahead.ts), between two trace markers. Prints what the second walk found. argv: root
import { mkdir, rename, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { IgnoreRules } from "../../src/checkpoint/workspace-index/ignore-rules.js";
import { walkWorkspace } from "../../src/checkpoint/workspace-index/walk.js";
import { markTraced } from "../helpers/trace-marker.js";
import { trustListings } from "../helpers/trusted-listings.js";

const [root] = process.argv.slice(2);
if (!root) throw new Error("usage: stat-ahead-traced root");
const workspace = join(root, "ws");
const outside = join(root, "outside");
for (const folder of ["p/a", "q/b"]) {
  await mkdir(join(workspace, folder), { recursive: true });
  for (let i = 0; i < 20; i++) await writeFile(join(workspace, folder, `f${i}.txt`), `${folder} ${i}\n`);
}
await mkdir(outside);
const limits = { maxFiles: 100_000, maxBytes: 1 << 30, maxFileBytes: 1 << 20 };
const first = await walkWorkspace(workspace, new IgnoreRules(), limits);
const known = { entries: first.entries, folders: trustListings(first.folders) };
await new Promise((resolve) => setTimeout(resolve, 30)); // past the file clock's tick: the moves show in the times
await rename(join(workspace, "p"), join(outside, "p"));
await symlink(join(outside, "p"), join(workspace, "p"));
markTraced("start");
const second = await walkWorkspace(workspace, new IgnoreRules(), limits, known, undefined, 0);
markTraced("end");
process.stdout.write(
  `${JSON.stringify({ paths: [...second.entries.keys()].sort(), statsAhead: second.statsAhead })}\n`,
);
