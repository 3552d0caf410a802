// Child process for the readers-during-cut test: rewinds a session to a point `cut` events before
// its end, then undoes that rewind, over and over, until its stdin ends. Before each rewind it
// prints "target <sequence>" (what a reader may see while the log is cut and before the rewind's
// own event is appended); after each rewind and each undo, "state <lastSequence>"; at the end "done".
// argv: root sessionId cut
import { SessionStore, rewind, undoRewind } from "../../src/index.js";

const [root, id, cutText] = process.argv.slice(2);
if (!root || !id || !cutText) throw new Error("usage: rewind-undo-loop root sessionId cut");
const cut = Number(cutText);

const store = new SessionStore({ root, lockStaleMs: 4000 });
let stop = false;
process.stdin.on("end", () => (stop = true)).resume();
let rounds = 0;
while (!stop) {
  const last = await store.head(id);
  process.stdout.write(`target ${last - cut}\n`);
  const report = await rewind(store, id, { toSequence: last - cut, mode: "conversation" });
  process.stdout.write(`state ${report.markerSequence}\n`);
  const undone = await undoRewind(store, id);
  process.stdout.write(`state ${undone.markerSequence}\n`);
  rounds++;
}
await store.close();
process.stdout.write(`done ${rounds}\n`);
