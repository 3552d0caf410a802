// One `store.list()`, timed, in a process of its own (run under `ulimit -n 256` by bench/scale.bench.ts).
// Usage: node --import tsx bench/list.child.ts <root>
import { SessionStore } from "../src/index.js";

export interface ListRun {
  listed: number;
  unreadable: number;
  ms: number;
}

const root = process.argv[2];
if (!root) throw new Error("usage: list.child.ts <root>");
const store = new SessionStore({ root });
try {
  await store.list(); // warm: module loading and the first directory reads are not what is measured
  const started = performance.now();
  const sessions = await store.list();
  const ms = performance.now() - started;
  const run: ListRun = { listed: sessions.length, unreadable: sessions.filter((s) => s.unreadable).length, ms };
  process.stdout.write(JSON.stringify(run) + "\n");
} finally {
  await store.close();
}
