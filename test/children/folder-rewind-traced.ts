// Child process, run under strace by test/rewind/folder-removal-calls.process.test.ts: a tool makes a folder of
// `files` files (its path recorded absent before), then the session is rewound between two trace markers, which
// removes that folder with everything in it; prints whether it is gone.
// argv: root files
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore, rewind } from "../../src/index.js";
import { markTraced } from "../helpers/trace-marker.js";

const [root, count] = process.argv.slice(2);
if (!root || !count) throw new Error("usage: folder-rewind-traced root files");
const workspace = join(root, "ws");
await mkdir(workspace, { recursive: true });
await writeFile(join(workspace, "README.md"), "a project\n");
// The lease kept across calls (see rewind-traced.ts): the traced call then takes no lock anew.
const store = new SessionStore({ root: join(root, "store"), lockIdleMs: 60_000 });
const checkpoints = new CheckpointStore(store);
const session = await store.create({ workspace });
const target = await store.append(session.id, { type: "message", payload: { role: "user", content: "generate" } });
await checkpoints.around(session.id, { tool: "generate", paths: ["generated"], callId: "call-1" }, async () => {
  for (let i = 0; i < Number(count); i++) {
    await mkdir(join(workspace, "generated", `part-${i % 10}`), { recursive: true });
    await writeFile(join(workspace, "generated", `part-${i % 10}`, `file-${i}.ts`), `export const n = ${i};\n`);
  }
});
markTraced("start");
const report = await rewind(store, session.id, { toSequence: target.sequence });
markTraced("end");
await store.close();
const gone = !existsSync(join(workspace, "generated"));
process.stdout.write(`${JSON.stringify({ filesDeleted: report.filesDeleted, gone })}\n`);
