// One rewind, timed and with its peak memory, in a process of its own: the peak (maxRSS) is the
// process's, so nothing an earlier suite held can hide in it or inflate it.
// Usage: node --import tsx bench/rewind.child.ts <root> <sessionId> <toSequence> <keepUndo | "undo">
// ("undo": the undo of the session's last rewind instead, `eventsRemoved` then the events it put back).
import { SessionStore, rewind, undoRewind } from "../src/index.js";

export interface RewindRun {
  eventsRemoved: number;
  ms: number;
  /** Resident memory just before the rewind, and the process's peak by its end. */
  rssBeforeMB: number;
  peakRssMB: number;
}

const MB = 1024 * 1024;
const [root, sessionId, toSequence, keepUndo] = process.argv.slice(2);
if (!root || !sessionId || !toSequence || !keepUndo)
  throw new Error("usage: rewind.child.ts <root> <sessionId> <toSequence> <keepUndo>");

const store = new SessionStore({ root, durability: "none" });
try {
  // Opened and warmed on a read of the first event, so the rewind's own growth is what is measured.
  for await (const _ of store.read(sessionId, { toSequence: 1 })) break;
  const rssBeforeMB = process.memoryUsage().rss / MB;
  const started = performance.now();
  const eventsRemoved =
    keepUndo === "undo"
      ? (await undoRewind(store, sessionId)).eventsRestored
      : (
          await rewind(store, sessionId, {
            toSequence: Number(toSequence),
            mode: "conversation",
            keepUndo: Number(keepUndo),
          })
        ).eventsRemoved;
  const ms = performance.now() - started;
  const peakRssMB = (process.resourceUsage().maxRSS * 1024) / MB;
  const run: RewindRun = { eventsRemoved, ms, rssBeforeMB, peakRssMB };
  process.stdout.write(JSON.stringify(run) + "\n");
} finally {
  await store.close();
}
