// Child process for test/rewind/few-descriptors.process.test.ts: for each `free` from 0 to 60 (step 2), a new
// session whose 20 files (each in a folder of its own) were edited through `around`, rewound with all but `free` of
// the process's descriptors taken up (opens of /dev/null). Prints, per round, what the rewind gave (its report or its
// error's code), what the files held right after, with every descriptor given back, and what they hold once a new
// store has appended to the session (the next writer settles a rewind left failed).
// argv: root
import { closeSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, SessionStore, isAgentTapeError, rewind } from "../../src/index.js";
import { takeAllBut } from "../helpers/take-descriptors.js";

const [root] = process.argv.slice(2);
if (!root) throw new Error("usage: rewind-few-descriptors root");
const FILES = 20;
const paths = Array.from({ length: FILES }, (_, i) => `d${i}/f${i}.txt`);

const rounds: { free: number; outcome: string; osCode?: string; rolledBack?: boolean; then: string; now: string }[] =
  [];
for (let free = 0; free <= 60; free += 2) {
  const dir = join(root, `round-${free}`);
  const workspace = join(dir, "ws");
  for (const path of paths) {
    await mkdir(join(workspace, path, ".."), { recursive: true });
    await writeFile(join(workspace, path), `before ${path}\n`);
  }
  const store = new SessionStore({ root: join(dir, "store"), lockIdleMs: 60_000 });
  const checkpoints = new CheckpointStore(store);
  const session = await store.create({ workspace });
  const target = await store.append(session.id, { type: "message", payload: { role: "user", content: "edit" } });
  for (const path of paths)
    await checkpoints.around(session.id, { tool: "edit_file", paths: [path] }, () =>
      writeFile(join(workspace, path), `edited ${path}\n`),
    );
  const taken = takeAllBut(free);
  let round: Omit<(typeof rounds)[number], "then" | "now">;
  try {
    const report = await rewind(store, session.id, { toSequence: target.sequence });
    round = { free, outcome: `restored ${report.filesRestored}` };
  } catch (error) {
    round = { free, outcome: isAgentTapeError(error) ? error.code : String(error) };
    if (isAgentTapeError(error, "STORAGE_FAILED")) round.osCode = error.osCode;
    if (isAgentTapeError(error, "REWIND_FAILED")) round.rolledBack = error.rolledBack;
  } finally {
    for (const fd of taken) closeSync(fd);
  }
  const then = filesHold(workspace);
  await store.close().catch(() => undefined);
  const next = new SessionStore({ root: join(dir, "store") });
  await next.append(session.id, { type: "message", payload: { role: "user", content: "next" } });
  await next.close();
  rounds.push({ ...round, then, now: filesHold(workspace) });
}
process.stdout.write(`${JSON.stringify(rounds)}\n`);

/** "before", "edited", or "mixed: …" when the files do not all hold the same side. */
function filesHold(workspace: string): string {
  const sides = new Set(paths.map((path) => readFileSync(join(workspace, path), "utf8").split(" ")[0]));
  return sides.size === 1 ? [...sides][0]! : `mixed: ${[...sides].join(", ")}`;
}
