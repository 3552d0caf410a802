// Child process for readers-during-cut tests whose cuts are all in place (one ftruncate, never a new file):
// rewinds a session `cut` events back, undoes it, then over and over rewinds to the marker of the rewind it
// last undid (a single line, so the cut falls between lines, never inside the batch the undo put back) and
// undoes that, until its stdin ends. Before each rewind it prints "target <sequence>"; after each rewind and
// each undo, "state <lastSequence>"; at the end "done <rounds>".
// argv: root sessionId cut
import { SessionStore, rewind, undoRewind } from "../../src/index.js";

const [root, id, cutText] = process.argv.slice(2);
if (!root || !id || !cutText) throw new Error("usage: rewind-undo-in-place-loop root sessionId cut");

const store = new SessionStore({ root, lockStaleMs: 4000 });
let stop = false;
process.stdin.on("end", () => (stop = true)).resume();
let rounds = 0;
let target = (await store.head(id)) - Number(cutText);
while (!stop) {
  process.stdout.write(`target ${target}\n`);
  const report = await rewind(store, id, { toSequence: target, mode: "conversation" });
  process.stdout.write(`state ${report.markerSequence}\n`);
  const undone = await undoRewind(store, id);
  process.stdout.write(`state ${undone.markerSequence}\n`);
  target = report.markerSequence!;
  rounds++;
}
await store.close();
process.stdout.write(`done ${rounds}\n`);
