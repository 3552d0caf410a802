// Child process, run under strace by test/checkpoint/scanned-blobs-durable.process.test.ts: `count` files are
// written, by a shell command (`by` "command": its scan stores their bytes in the pack without an fsync, nothing
// references them yet) or by a tool whose capture stored them durably (`by` "capture"); then, between two trace
// markers, one `capture` of those files, whose checkpoint references the same bytes. Prints how many files the
// checkpoint names. argv: root count by
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore } from "../../src/index.js";
import { markTraced } from "../helpers/trace-marker.js";

const [root, count, by] = process.argv.slice(2);
if (!root || !count || (by !== "command" && by !== "capture"))
  throw new Error("usage: capture-of-scanned-traced root count command|capture");
const workspace = join(root, "ws");
const store = new SessionStore({ root: join(root, "store"), lockIdleMs: 60_000 });
const checkpoints = new CheckpointStore(store);
await mkdir(workspace, { recursive: true });
const session = await store.create({ workspace });
const paths = Array.from({ length: Number(count) }, (_, i) => `gen/file-${i}.ts`);
const write = async () => {
  await mkdir(join(workspace, "gen"), { recursive: true });
  for (const [i, path] of paths.entries()) await writeFile(join(workspace, path), `export const v${i} = ${i};\n`);
};
if (by === "command") await checkpoints.aroundCommand(session.id, { tool: "bash" }, write);
else {
  await write();
  await checkpoints.capture(session.id, { tool: "edit_file", paths });
}
markTraced("start");
const event = await checkpoints.capture(session.id, { tool: "edit_file", paths });
markTraced("end");
await store.close();
process.stdout.write(`${JSON.stringify({ files: event?.payload.files.length })}\n`);
