// Child process that starts many readers of one session's log, takes one event from each and drops it half way
// (never finished, never returned), lets the garbage collector run, and prints as JSON how many descriptors the
// process holds before, once the readers are dropped and collected, and after.
// argv: root
import { readdirSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { SessionStore } from "../../src/index.js";

const [root] = process.argv.slice(2);
if (!root) throw new Error("usage: dropped-readers root");
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const descriptors = () => readdirSync("/proc/self/fd").length;

const store = new SessionStore({ root });
const { id } = await store.create();
for (let i = 0; i < 20; i++) await store.append(id, { type: "message", payload: { role: "user", content: `m${i}` } });
const before = descriptors();
const DROPPED = 200;
const startDropped = async () => {
  for (let i = 0; i < DROPPED; i++) {
    const reader = store.read(id)[Symbol.asyncIterator]();
    await reader.next(); // one event taken; the reader is left suspended and dropped
  }
};
await startDropped();
const heldWhileDropped = descriptors();
for (let round = 0; round < 5; round++) {
  gc();
  await new Promise((resolve) => setTimeout(resolve, 20));
}
process.stdout.write(`${JSON.stringify({ before, heldWhileDropped, after: descriptors(), dropped: DROPPED })}\n`);
await store.close();
