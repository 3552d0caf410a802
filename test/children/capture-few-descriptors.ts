// Child process for test/checkpoint/capture-few-descriptors.process.test.ts: a store and a session with one
// capture made, then the process's descriptors taken up (opens of /dev/null) but for `free`, for each `free` from 0
// to 12; a capture of a file attempted each time. Prints what each gave: the record it made or the error's code,
// then, with every descriptor given back, what the tape holds.
// argv: root
import { closeSync, openSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore, isAgentTapeError } from "../../src/index.js";

const [root] = process.argv.slice(2);
if (!root) throw new Error("usage: capture-few-descriptors root");
const workspace = join(root, "ws");
const store = new SessionStore({ root: join(root, "store"), lockIdleMs: 60_000 });
const checkpoints = new CheckpointStore(store);
await writeFile(join(root, "marker"), ""); // the store's folder made before the workspace's
const { mkdir } = await import("node:fs/promises");
await mkdir(join(workspace, "src/deep"), { recursive: true });
await writeFile(join(workspace, "src/deep/file.ts"), "export const value = 1;\n");
const session = await store.create({ workspace });
await checkpoints.capture(session.id, { tool: "edit_file", paths: ["src/deep/file.ts"] });

const outcomes: { free: number; record?: unknown; error?: string; osCode?: string }[] = [];
for (let free = 0; free <= 12; free++) {
  await writeFile(join(workspace, "src/deep/file.ts"), `export const value = ${free + 2};\n`);
  const taken: number[] = [];
  for (;;) {
    try {
      taken.push(openSync("/dev/null", "r"));
    } catch {
      break;
    }
  }
  for (const fd of taken.splice(0, free)) closeSync(fd);
  try {
    const event = await checkpoints.capture(session.id, { tool: "edit_file", paths: ["src/deep/file.ts"] });
    outcomes.push({ free, record: event?.payload.files[0] });
  } catch (error) {
    outcomes.push({
      free,
      error: isAgentTapeError(error) ? error.code : String(error),
      ...(isAgentTapeError(error, "STORAGE_FAILED") ? { osCode: error.osCode } : {}),
    });
  } finally {
    for (const fd of taken) closeSync(fd);
  }
}
const tape: unknown[] = [];
for await (const event of store.read(session.id)) if (event.type === "session_checkpoint") tape.push(event.payload);
await store.close();
process.stdout.write(`${JSON.stringify({ outcomes, tape })}\n`);
