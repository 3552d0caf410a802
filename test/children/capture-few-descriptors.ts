// Child process for test/checkpoint/capture-few-descriptors.process.test.ts: a store and a session with one
// capture made, then the process's descriptors taken up (opens of /dev/null) but for `free`, for each `free` from 0
// to 12; a capture of a file attempted each time, then a shell command's capture (`aroundCommand`, its command
// editing files with every descriptor given back for the edits alone), then a scan's read of a file with none left.
// Prints what each gave: the record it made or the error's code, then, with every descriptor given back, what the
// tape holds.
// argv: root
import { closeSync, writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore, isAgentTapeError } from "../../src/index.js";
import { takeAllBut } from "../helpers/take-descriptors.js";
import { readWorkspaceFile } from "../../src/checkpoint/workspace-index/read-files.js";

const [root] = process.argv.slice(2);
if (!root) throw new Error("usage: capture-few-descriptors root");
const workspace = join(root, "ws");
const store = new SessionStore({ root: join(root, "store"), lockIdleMs: 60_000 });
const checkpoints = new CheckpointStore(store);
await mkdir(join(workspace, "src/deep"), { recursive: true });
await writeFile(join(workspace, "src/deep/file.ts"), "export const value = 1;\n");
for (let i = 0; i < 8; i++) {
  await mkdir(join(workspace, `lib/part-${i}`), { recursive: true });
  await writeFile(join(workspace, `lib/part-${i}/mod.ts`), "export const part = -1;\n");
}
const session = await store.create({ workspace });
await checkpoints.capture(session.id, { tool: "edit_file", paths: ["src/deep/file.ts"] });

const outcomes: { free: number; record?: unknown; error?: string; osCode?: string }[] = [];
for (let free = 0; free <= 12; free++) {
  await writeFile(join(workspace, "src/deep/file.ts"), `export const value = ${free + 2};\n`);
  const taken = takeAllBut(free);
  try {
    const event = await checkpoints.capture(session.id, { tool: "edit_file", paths: ["src/deep/file.ts"] });
    outcomes.push({ free, record: event?.payload.files[0] });
  } catch (error) {
    outcomes.push({ free, ...failure(error) });
  } finally {
    for (const fd of taken) closeSync(fd);
  }
}
const commands: { free: number; ok?: true; error?: string; osCode?: string }[] = [];
for (let free = 0; free <= 12; free++) {
  const taken = takeAllBut(free);
  try {
    await checkpoints.aroundCommand(session.id, { tool: "bash", callId: `command-${free}` }, () => {
      for (const fd of taken.splice(0)) closeSync(fd);
      writeFileSync(join(workspace, "src/deep/file.ts"), `export const value = ${free + 100};\n`);
      for (let i = 0; i < 8; i++)
        writeFileSync(join(workspace, `lib/part-${i}/mod.ts`), `export const part = ${free};\n`);
      taken.push(...takeAllBut(free));
    });
    commands.push({ free, ok: true });
  } catch (error) {
    commands.push({ free, ...failure(error) });
  } finally {
    for (const fd of taken) closeSync(fd);
  }
}

// The scan's own read of a file, with no descriptor left: its reads are one at a time, so the commands above meet
// the limit earlier (the index's record, the lock); an agent's other work taking descriptors meanwhile would not.
const noneLeft = takeAllBut(0);
let scanRead: { error?: string; osCode?: string; read?: unknown };
try {
  scanRead = { read: await readWorkspaceFile(join(workspace, "src/deep/file.ts"), 1 << 20) };
} catch (error) {
  scanRead = failure(error);
} finally {
  for (const fd of noneLeft) closeSync(fd);
}

const tape: unknown[] = [];
for await (const event of store.read(session.id)) if (event.type === "session_checkpoint") tape.push(event.payload);
await store.close();
process.stdout.write(`${JSON.stringify({ outcomes, commands, scanRead, tape })}\n`);

/** An error as the test reads it: its code (or text), and the OS code of a STORAGE_FAILED. */
function failure(error: unknown): { error: string; osCode?: string } {
  return {
    error: isAgentTapeError(error) ? error.code : String(error),
    ...(isAgentTapeError(error, "STORAGE_FAILED") ? { osCode: error.osCode } : {}),
  };
}
