// Child process for the capture crash test: rewrites big files and captures them, forever, until SIGKILLed.
// Prints "capturing <n>" just before each capture and "captured <sequence>" once it resolved.
// One file keeps its bytes for a few rounds, so some captures reuse a blob an earlier event already indexes.
// argv: root sessionId workspace fileBytes
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore } from "../../src/index.js";

const [root, sessionId, workspace, fileBytes] = process.argv.slice(2);
if (!root || !sessionId || !workspace) throw new Error("usage: capture-loop root sessionId workspace fileBytes");

const size = Number(fileBytes ?? 1024 * 1024);
const store = new SessionStore({ root, lockStaleMs: 2000 });
const checkpoints = new CheckpointStore(store, { maxFileBytes: size * 2 });
const paths = ["stable.bin", "fresh-1.bin", "fresh-2.bin", "fresh-3.bin"];

for (let n = 0; ; n++) {
  if (n % 3 === 0) await writeFile(join(workspace, "stable.bin"), randomBytes(size));
  // One small fresh file: its blob lands well before the big ones, widening the moment when a
  // blob is on disk and its event is not.
  await writeFile(join(workspace, "fresh-1.bin"), randomBytes(4096));
  for (const path of paths.slice(2)) await writeFile(join(workspace, path), randomBytes(size));
  process.stdout.write(`capturing ${n}\n`);
  const event = await checkpoints.capture(sessionId, { tool: "rewrite", paths });
  process.stdout.write(`captured ${event?.sequence}\n`);
}
