// Child process, run under strace by test/rewind/durable-calls.process.test.ts: makes a workspace of `files`
// files in folders of 20, records a shell command that edits one of them (the workspace index), then rewinds
// that command (files only, keepUndo 0, as the shell benchmark does) between two trace markers, and prints
// the report's counts as JSON.
// argv: root files
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore, rewind } from "../../src/index.js";
import { markTraced } from "../helpers/trace-marker.js";

const [root, count] = process.argv.slice(2);
if (!root || !count) throw new Error("usage: shell-rewind-traced root files");
const workspace = join(root, "ws");
const paths = Array.from({ length: Number(count) }, (_, i) => `pkg-${Math.floor(i / 20)}/src/file-${i}.ts`);
for (const [i, path] of paths.entries()) {
  await mkdir(join(workspace, path, ".."), { recursive: true });
  await writeFile(join(workspace, path), `export const value = ${i};\n`.repeat(20));
}
// The lease kept across calls, as an agent mid-turn keeps it: on a loaded machine the default idle time (50 ms)
// can pass before the traced call, which would then take the lock anew and count that too.
const store = new SessionStore({ root: join(root, "store"), lockIdleMs: 60_000 });
const checkpoints = new CheckpointStore(store);
const session = await store.create({ workspace });
await checkpoints.aroundCommand(session.id, { tool: "bash" }, () => undefined); // the first scan
const target = (await store.get(session.id))!.lastSequence;
const hot = join(workspace, paths[0]!);
await checkpoints.aroundCommand(session.id, { tool: "bash" }, () => writeFile(hot, "edited by a command\n"));
markTraced("start");
const report = await rewind(store, session.id, { toSequence: target, mode: "files", keepUndo: 0 });
markTraced("end");
const intact = (await readFile(hot, "utf8")) === "export const value = 0;\n".repeat(20);
await store.close();
process.stdout.write(`${JSON.stringify({ filesRestored: report.filesRestored, intact })}\n`);
