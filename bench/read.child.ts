// One whole read of a session through the store, timed and with its peak memory, in a process of its own:
// the peak (maxRSS) is the process's, so nothing an earlier suite held can hide in it or inflate it.
// Usage: node --import tsx bench/read.child.ts <root> <sessionId>
import { SessionStore } from "../src/index.js";

export interface ReadRun {
  events: number;
  ms: number;
  /** Resident memory just before the read, and the process's peak by its end. */
  rssBeforeMB: number;
  peakRssMB: number;
}

const MB = 1024 * 1024;
const [root, sessionId] = process.argv.slice(2);
if (!root || !sessionId) throw new Error("usage: read.child.ts <root> <sessionId>");

const store = new SessionStore({ root, durability: "none" });
try {
  // Opened and warmed on a read of the first event, so the read's own growth is what is measured.
  for await (const _ of store.read(sessionId, { toSequence: 1 })) break;
  const rssBeforeMB = process.memoryUsage().rss / MB;
  const started = performance.now();
  let events = 0;
  for await (const _ of store.read(sessionId)) events++;
  const ms = performance.now() - started;
  const peakRssMB = (process.resourceUsage().maxRSS * 1024) / MB;
  const run: ReadRun = { events, ms, rssBeforeMB, peakRssMB };
  process.stdout.write(JSON.stringify(run) + "\n");
} finally {
  await store.close();
}
