// Child process, run under strace by test/checkpoint/after-state-durable-calls.process.test.ts: between two
// trace markers, records the after-state of `files` files, either alone (`after`, what `around` adds to a tool
// call) or as part of a shell command's capture (`aroundCommand`, with or without after-states); the session,
// its log and the lease exist before the markers. Prints the event types appended between them.
// argv: root files after|command|command-without
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore } from "../../src/index.js";
import { markTraced } from "../helpers/trace-marker.js";

const [root, count, kind] = process.argv.slice(2);
if (!root || !count || !kind) throw new Error("usage: after-state-traced root files after|command|command-without");
const workspace = join(root, "ws");
await mkdir(join(workspace, "src"), { recursive: true });
const paths = Array.from({ length: Number(count) }, (_, i) => `src/file-${i}.ts`);
for (const path of paths) await writeFile(join(workspace, path), `export const v = 0; // ${path}\n`);
// The lease kept across calls, as an agent mid-turn keeps it: the traced call never takes the lock anew.
const store = new SessionStore({ root: join(root, "store"), lockIdleMs: 60_000 });
const checkpoints = new CheckpointStore(store, { afterState: kind !== "command-without" });
const session = await store.create({ workspace });
await store.append(session.id, { type: "message", payload: { role: "user", content: "edit them" } });
const edit = () => Promise.all(paths.map((path) => writeFile(join(workspace, path), `export const v = 1;\n`)));
let last: number;
if (kind === "after") {
  await checkpoints.capture(session.id, { tool: "edit_file", paths });
  await edit();
  last = await store.head(session.id);
  markTraced("start");
  await checkpoints.after(session.id, { tool: "edit_file", paths });
  markTraced("end");
} else {
  await checkpoints.aroundCommand(session.id, { tool: "bash" }, async () => undefined); // the index, stored
  last = await store.head(session.id);
  markTraced("start");
  await checkpoints.aroundCommand(session.id, { tool: "bash" }, edit);
  markTraced("end");
}
const appended = await store.readAll(session.id, { fromSequence: last + 1 });
checkpoints.close();
await store.close();
process.stdout.write(`${JSON.stringify(appended.map((e) => [e.type, (e.payload as { files: [] }).files.length]))}\n`);
