// Child: reads one session as a reader would, from a process of its own, and prints what it saw as JSON:
// get, list, head, readAll's sequences and types, conversation's message count, and the CLI's `show`
// (exit code and output). Any error is printed with its code instead of failing the child.
// argv: root sessionId
import { SessionStore, isAgentTapeError } from "../../src/index.js";
import { runCli } from "../../src/cli/run-cli.js";

const [root, id] = process.argv.slice(2);
if (!root || !id) throw new Error("usage: read-session root sessionId");

const store = new SessionStore({ root });
const seen: Record<string, unknown> = {};
async function look(name: string, read: () => Promise<unknown>): Promise<void> {
  try {
    seen[name] = await read();
  } catch (error) {
    seen[name] = { failed: isAgentTapeError(error) ? error.code : String(error) };
  }
}
try {
  await look("get", () => store.get(id));
  await look("listed", async () => (await store.list()).find((s) => s.id === id));
  await look("head", () => store.head(id));
  await look("events", async () => (await store.readAll(id)).map((e) => `${e.sequence} ${e.type}`));
  await look("messages", async () => (await store.conversation(id)).messages.length);
  let stdout = "";
  let stderr = "";
  const code = await runCli(["show", id, "--root", root], {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: {},
  });
  seen.show = { code, stdout, stderr };
} finally {
  await store.close();
}
process.stdout.write(`${JSON.stringify(seen)}\n`);
