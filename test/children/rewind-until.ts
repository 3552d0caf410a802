// Child process for the rewind crash tests: rewinds a session (or undoes its last rewind), printing
// each step as it is reached. Given a step to stop at, it freezes right there — event loop blocked,
// nothing more written — so the parent can SIGKILL it at that exact boundary. With "none" it runs on.
// argv: root sessionId workspace operation(rewind|undo) toSequence stopAt keepUndo
import { SessionStore, rewind, undoRewind } from "../../src/index.js";

const [root, id, workspace, operation, toSequence, stopAt, keepUndo] = process.argv.slice(2);
if (!root || !id || !workspace || !operation || !stopAt)
  throw new Error("usage: rewind-until root sessionId workspace rewind|undo toSequence stopAt keepUndo");

// 4 s, not the 2 s minimum: at 2 s a child slowed by a loaded machine (the boundary tests run together) could miss
// its own lock refresh and lose the lock before reaching its step.
const store = new SessionStore({ root, lockStaleMs: 4000 });
const onProgress = (step: string) => {
  // A pipe write is synchronous on Linux: the parent can read the line even while we are frozen.
  process.stdout.write(`${step}\n`);
  if (step === stopAt) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
};
const report =
  operation === "undo"
    ? await undoRewind(store, id, { workspace, onProgress })
    : await rewind(store, id, {
        toSequence: Number(toSequence),
        workspace,
        keepUndo: Number(keepUndo ?? 1),
        onProgress,
      });
process.stdout.write(`done ${report.markerSequence}\n`);
await store.close();
