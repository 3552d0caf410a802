// Child process that forks one session and prints {"id":…,"lastSequence":n,"events":n} as JSON.
// The test runs it with a small heap (NODE_OPTIONS=--max-old-space-size) to prove the fork streams.
// argv: root parentId
import { SessionStore } from "../../src/index.js";

const [root, parentId] = process.argv.slice(2);
if (!root || !parentId) throw new Error("usage: fork-session root parentId");

const store = new SessionStore({ root, durability: "none" });
try {
  const fork = await store.fork(parentId);
  let events = 0;
  for await (const _ of store.read(fork.id)) events++;
  process.stdout.write(JSON.stringify({ id: fork.id, lastSequence: fork.lastSequence, events }) + "\n");
} finally {
  await store.close();
}
