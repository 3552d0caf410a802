// Child process for the multi-process test: one writer appending its numbered ticks to a shared session,
// starting when its stdin ends.
// argv: root sessionId writer count durability lockMaxHoldMs concurrency
import { z } from "zod";
import { SessionStore, type Durability } from "../../src/index.js";

const [root, sessionId, writer, count, durability, lockMaxHoldMs, concurrency] = process.argv.slice(2);
if (!root || !sessionId || !writer)
  throw new Error("usage: append-writer root sessionId writer count durability lockMaxHoldMs concurrency");

const store = new SessionStore({
  root,
  durability: (durability ?? "fsync") as Durability,
  lockMaxHoldMs: Number(lockMaxHoldMs ?? 1000),
  events: { tick: z.object({ writer: z.string(), n: z.number().int() }) },
});
// Start line: every writer is up before any appends, so they really run at the same time.
process.stdout.write("ready\n");
await new Promise<void>((resolve) => process.stdin.on("end", resolve).resume());
const total = Number(count ?? 100);
const together = Math.max(1, Number(concurrency ?? 1));
for (let n = 0; n < total; n += together) {
  const round: Promise<unknown>[] = [];
  for (let k = n; k < Math.min(total, n + together); k++)
    round.push(store.append(sessionId, { type: "tick", payload: { writer, n: k } }));
  await Promise.all(round);
}
await store.close();
process.stdout.write(`done ${total}\n`);
