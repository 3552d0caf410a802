import { afterAll, describe, expect, it } from "vitest";
import { sessionLockKeys } from "../../src/backend/postgres/lock.js";
import type { StorageBackend } from "../../src/backend/types.js";
import { event, range, readAll, record } from "../../src/testing/fixtures.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { pgBackend, pgUrl, useSchemas } from "../helpers/postgres.js";
import { rounds } from "../helpers/rounds.js";
import { closeAfter, openStore } from "../helpers/fixture.js";

// PostgreSQL with real processes: several writers on one session, a holder killed, a holder frozen past its
// lease, a holder's connection cut mid-batch. The workers are test/children/pg-session-worker.ts.
const schemas = useSchemas("pgprocess");
const children = childrenKilledAfterEach();
afterAll(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});
/** Lease of the workers and of the backends here (pgBackend's): a frozen holder loses its lock after it. */
const LEASE_MS = 2000;

function setup(): { schema: string; backend: StorageBackend } {
  const schema = schemas.make();
  const backend = pgBackend(schema, { lockLeaseMs: LEASE_MS });
  closeAfter(backend);
  return { schema, backend };
}

function worker(mode: string, schema: string, sessionId: string, arg?: string): Child {
  const child = new Child("pg-session-worker.ts", [mode, pgUrl(), schema, sessionId, ...(arg ? [arg] : [])]);
  children.push(child);
  return child;
}

// Appends per process: 200 in npm test, 1000 in the soak run (rounds(), test/helpers/rounds.ts).
const ROUNDS = rounds(200, 1000);

describe("PostgreSQL with real processes", () => {
  it(`4 processes x ${ROUNDS} appends to one session: no duplicate, no gap, nothing acknowledged lost`, async () => {
    const { schema, backend } = setup();
    const store = openStore({ backend });
    await store.create({ id: "shared" });
    await store.close();
    const workers = ["a", "b", "c", "d"].map((name) => worker("append", schema, "shared", `${name}:${ROUNDS}`));
    const runs = await Promise.all(workers.map((w) => w.done()));
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const events = await readAll(backend, "shared");
    expect(events.map((e) => e.sequence)).toEqual(range(1, 4 * ROUNDS));
    const bySequence = new Map(events.map((e) => [e.sequence, (e.payload as { content: string }).content]));
    const acked = runs.flatMap((run) => run.stdout.split("\n").filter((l) => l.startsWith("acked ")));
    expect(acked).toHaveLength(4 * ROUNDS);
    for (const line of acked) {
      const [, content, sequence] = line.split(" ");
      expect(bySequence.get(Number(sequence))).toBe(content);
    }
  }, 240_000);

  it("a holder killed with SIGKILL is taken over within its lease", async () => {
    const { schema, backend } = setup();
    await backend.createSession(record("s1"), [event("s1", 1)]);
    const holder = worker("hold", schema, "s1");
    await holder.waitForLine((l) => l.startsWith("held"));
    holder.kill("SIGKILL");
    await holder.done();
    const started = Date.now();
    const locked = await backend.lock("s1", { waitMs: LEASE_MS });
    expect(Date.now() - started).toBeLessThan(LEASE_MS);
    await locked.append([event("s1", 2)], { sync: true });
    await locked.release();
    expect((await readAll(backend, "s1")).map((e) => e.sequence)).toEqual([1, 2]);
  });

  it("a holder stopped with SIGSTOP past its lease writes nothing after it wakes: LOCK_COMPROMISED", async () => {
    const { schema, backend } = setup();
    await backend.createSession(record("s1"), [event("s1", 1)]);
    const holder = worker("hold", schema, "s1");
    await holder.waitForLine((l) => l.startsWith("held"));
    holder.kill("SIGSTOP");
    try {
      // The server shuts the silent holder's connection after the lease; the lock passes here then.
      const locked = await backend.lock("s1", { waitMs: 4 * LEASE_MS });
      await locked.append([event("s1", 2, { role: "user", content: "from the new holder" })], { sync: true });
      await locked.release();
    } finally {
      holder.kill("SIGCONT");
    }
    const answer = holder.waitForLine((l) => l.startsWith("wrote") || l.startsWith("refused"));
    holder.process.stdin!.write("write 3\n");
    expect(await answer).toBe("refused LOCK_COMPROMISED");
    holder.endInput();
    const events = await readAll(backend, "s1");
    expect(events.map((e) => e.sequence)).toEqual([1, 2]);
    expect(events[1]?.payload).toEqual({ role: "user", content: "from the new holder" });
  }, 60_000);

  // Cuts per run: 3 in npm test, 10 in the soak run.
  const CUTS = rounds(3, 10);
  it(`the holder's connection cut mid-appendMany (${CUTS} times) leaves every batch whole or absent`, async () => {
    const { schema, backend } = setup();
    const size = 500;
    await backend.createSession(record("s1"));
    const admin = schemas.admin();
    const [k1, k2] = sessionLockKeys(schema, "s1");
    const acked: number[] = [];
    for (let cut = 0; cut < CUTS; cut++) {
      const child = worker("batches", schema, "s1", String(size));
      await child.waitForLine((l) => l.startsWith("batch"));
      // Somewhere in the next batches: a few ms later, the server ends the holder's connection.
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.floor(Math.random() * 40)));
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_locks
          WHERE locktype = 'advisory' AND granted AND classid = $1 AND objid = $2 AND objsubid = 2`,
        [k1, k2],
      );
      const run = await child.done();
      expect(run.stdout).toMatch(/failed (LOCK_COMPROMISED|STORAGE_FAILED)/);
      for (const line of run.stdout.split("\n").filter((l) => l.startsWith("batch ")))
        acked.push(Number(line.split(" ")[2]));
    }
    const sequences = (await readAll(backend, "s1")).map((e) => e.sequence);
    // Whole batches only, one after another, and every acknowledged one among them.
    expect(sequences.length % size).toBe(0);
    expect(sequences).toEqual(range(1, sequences.length));
    for (const last of acked) expect(sequences).toContain(last);
  }, 120_000);
});
