// `npm run example`: the smallest useful agent-tape program.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CheckpointStore, SessionStore, rewind } from "../src/index.js"; // in your project: "agent-tape"

const home = await mkdtemp(join(tmpdir(), "agent-tape-quickstart-"));
const workspace = join(home, "workspace");
await mkdir(workspace);
await writeFile(join(workspace, "hello.txt"), "Hello, world\n");
const show = async (when: string) =>
  console.log(`${when.padEnd(22)} hello.txt = ${JSON.stringify(await readFile(join(workspace, "hello.txt"), "utf8"))}`);

const store = new SessionStore({ root: join(home, "sessions") });
const checkpoints = new CheckpointStore(store);
const session = await store.create({ title: "quickstart", workspace });

// The agent's loop records what it does: the user's request, the tool call, its result.
const request = await store.append(session.id, { type: "message", payload: { role: "user", content: "Shout it." } });
await store.append(session.id, {
  type: "tool_call",
  payload: { callId: "c1", name: "write_file", input: { path: "hello.txt" } },
});
// around() stores hello.txt's current bytes (a session_checkpoint event), then runs the edit.
await checkpoints.around(session.id, { tool: "write_file", paths: ["hello.txt"], callId: "c1" }, () =>
  writeFile(join(workspace, "hello.txt"), "HELLO, WORLD!\n"),
);
await store.append(session.id, { type: "tool_result", payload: { callId: "c1", output: "ok" } });
await show("after the tool call:");

console.log("the tape:");
for await (const event of store.read(session.id)) console.log(`  #${event.sequence} ${event.type}`);

// Back to just after the request: the file comes back and the later events leave the tape.
const report = await rewind(store, session.id, { toSequence: request.sequence });
await show(`after rewind to #${request.sequence}:`);
console.log("report:", {
  changes: report.changes,
  eventsRemoved: report.eventsRemoved,
  markerSequence: report.markerSequence,
});
console.log("the tape:", (await store.readAll(session.id)).map((e) => `#${e.sequence} ${e.type}`).join(", "));

await store.close();
await rm(home, { recursive: true });
