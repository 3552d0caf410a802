// Child process, run under strace by test/checkpoint/capture-round-trips.process.test.ts: captures a
// new 4 KB file (a new blob) between two trace markers, the lease already held by an earlier capture, as
// an agent mid-turn does; prints the recorded kind. argv: root
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore } from "../../src/index.js";
import { markTraced } from "../helpers/trace-marker.js";

const [root] = process.argv.slice(2);
if (!root) throw new Error("usage: capture-traced root");
const workspace = join(root, "ws");
await mkdir(join(workspace, "src", "deep"), { recursive: true });
await writeFile(join(workspace, "src", "deep", "warm.ts"), "export const warm = 1;\n".repeat(100));
// The lease kept across calls, as an agent mid-turn keeps it: on a loaded machine the default idle time (50 ms)
// can pass before the traced call, which would then take the lock anew and count that too.
const store = new SessionStore({ root: join(root, "store"), lockIdleMs: 60_000 });
const checkpoints = new CheckpointStore(store);
const session = await store.create({ workspace });
await checkpoints.capture(session.id, { tool: "edit_file", paths: ["src/deep/warm.ts"] });
await writeFile(join(workspace, "src", "deep", "new.ts"), "// new file\n".padEnd(4096, "x"));
markTraced("start");
const event = await checkpoints.capture(session.id, { tool: "edit_file", paths: ["src/deep/new.ts"] });
markTraced("end");
await store.close();
process.stdout.write(`${JSON.stringify({ kind: event?.payload.files[0]?.kind })}\n`);
