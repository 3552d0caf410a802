// Child process working on one session of a PostgreSQL store (test/backend/postgres-*.process.test.ts).
// argv: mode url schema sessionId [arg]
//   append <name:rounds>  appends `rounds` events through a SessionStore, printing "acked <name>-<i> <sequence>"
//   hold                  takes the lock, prints "held <lastSequence>", then on each stdin line "write <sequence>"
//                         tries one append and prints "wrote <sequence>" or "refused <code>"
//   batches <size>        takes the lock and appends batches of `size` events until a write fails, printing
//                         "batch <first> <last>" after each acknowledged one and "failed <code>" at the end
import { createInterface } from "node:readline";
import { postgresBackend } from "../../src/backend/postgres/index.js";
import type { StoredEvent } from "../../src/core/events.js";
import { SessionStore, isAgentTapeError } from "../../src/index.js";

const [mode, url, schema, sessionId, arg] = process.argv.slice(2);
if (!mode || !url || !schema || !sessionId) throw new Error("usage: pg-session-worker mode url schema sessionId [arg]");
const backend = postgresBackend({ connectionString: url, schema, lockLeaseMs: 2000 });
const say = (line: string) => process.stdout.write(`${line}\n`);
const codeOf = (error: unknown) => (isAgentTapeError(error) ? error.code : String(error));

function event(sequence: number, content: string): StoredEvent {
  return {
    v: 1,
    id: `${sessionId}-${sequence}`,
    sessionId: sessionId!,
    sequence,
    type: "message",
    createdAt: new Date().toISOString(),
    payload: { role: "user", content },
  };
}

if (mode === "append") {
  const [name, rounds] = (arg ?? "w:10").split(":");
  // No idle hold: the lock passes to the next process after every append, the most hand-overs per event.
  const store = new SessionStore({ backend, lockIdleMs: 0 });
  for (let i = 1; i <= Number(rounds); i++) {
    const appended = await store.append(sessionId, {
      type: "message",
      payload: { role: "user", content: `${name}-${i}` },
    });
    say(`acked ${name}-${i} ${appended.sequence}`);
  }
  await store.close();
  say("done");
} else if (mode === "hold") {
  const locked = await backend.lock(sessionId, { waitMs: 30_000 });
  say(`held ${locked.lastSequence}`);
  for await (const line of createInterface({ input: process.stdin })) {
    const sequence = Number(line.split(" ")[1]);
    try {
      await locked.append([event(sequence, "from the old holder")], { sync: true });
      say(`wrote ${sequence}`);
    } catch (error) {
      say(`refused ${codeOf(error)}`);
    }
  }
  await backend.close();
} else if (mode === "batches") {
  const size = Number(arg ?? 100);
  const locked = await backend.lock(sessionId, { waitMs: 30_000 });
  say(`held ${locked.lastSequence}`);
  for (;;) {
    const first = locked.lastSequence + 1;
    const events = Array.from({ length: size }, (_, i) => event(first + i, `batch from ${first}`));
    try {
      await locked.append(events, { sync: true });
    } catch (error) {
      say(`failed ${codeOf(error)}`);
      break;
    }
    say(`batch ${first} ${first + size - 1}`);
  }
  await backend.close();
} else throw new Error(`unknown mode ${mode}`);
