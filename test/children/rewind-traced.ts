// Child process, run under strace by test/rewind/durable-calls.process.test.ts (and with few descriptors by
// few-descriptors.process.test.ts): makes a workspace of `files`
// files in folders of `perFolder` (10 unless given), edits each through its own `around`, then rewinds them all
// between two trace markers, and prints the report's counts as JSON.
// argv: root files [perFolder]
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore, rewind } from "../../src/index.js";
import { markTraced } from "../helpers/trace-marker.js";

const [root, count, perFolder = "10"] = process.argv.slice(2);
if (!root || !count) throw new Error("usage: rewind-traced root files [perFolder]");
const workspace = join(root, "ws");
const paths = Array.from(
  { length: Number(count) },
  (_, i) => `pkg-${Math.floor(i / Number(perFolder))}/src/file-${i}.ts`,
);
for (const path of paths) {
  await mkdir(join(workspace, path, ".."), { recursive: true });
  await writeFile(join(workspace, path), `export const value = ${paths.indexOf(path)};\n`.repeat(20));
}
// The lease kept across calls, as an agent mid-turn keeps it: on a loaded machine the default idle time (50 ms)
// can pass before the traced call, which would then take the lock anew and count that too.
const store = new SessionStore({ root: join(root, "store"), lockIdleMs: 60_000 });
const checkpoints = new CheckpointStore(store);
const session = await store.create({ workspace });
const target = await store.append(session.id, { type: "message", payload: { role: "user", content: "edit" } });
for (const [i, path] of paths.entries())
  await checkpoints.around(session.id, { tool: "edit_file", paths: [path], callId: `call-${i}` }, () =>
    writeFile(join(workspace, path), `edited ${i}\n`),
  );
markTraced("start");
const report = await rewind(store, session.id, { toSequence: target.sequence });
markTraced("end");
// One at a time: test/rewind/few-descriptors.process.test.ts runs this with 200 descriptors for 300 files.
const restored: string[] = [];
for (const path of paths) restored.push(await readFile(join(workspace, path), "utf8"));
const intact = restored.every((text, i) => text === `export const value = ${i};\n`.repeat(20));
await store.close();
process.stdout.write(`${JSON.stringify({ filesRestored: report.filesRestored, intact })}\n`);
