import { describe, expect, it } from "vitest";
import { event, record } from "../../src/testing/fixtures.js";
import { closeAfter } from "../helpers/fixture.js";
import { runChild } from "../helpers/children.js";
import { pgBackend, pgUrl, useSchemas } from "../helpers/postgres.js";

// A replay on PostgreSQL reads the log a page at a time (src/backend/postgres/log.ts, docs/postgres.md,
// "Readers"): a reader in a process of its own, with a heap far smaller than the log, reads it all. A reader that
// held the whole tape (one page of everything) runs out of heap here.

const schemas = useSchemas("replay_memory");
/** ~1 KB lines: about 90 MB of log, against a 64 MB heap. */
const EVENTS = 80_000;
const HEAP_MB = 64;

describe("a replay of a PostgreSQL log much larger than the reader's heap", () => {
  it(`reads all ${EVENTS.toLocaleString("en")} events with a ${HEAP_MB} MB heap`, { timeout: 300_000 }, async () => {
    const schema = schemas.make();
    const backend = pgBackend(schema);
    closeAfter(backend);
    const content = "x".repeat(1000);
    async function* events() {
      for (let sequence = 1; sequence <= EVENTS; sequence++) yield event("long", sequence, { role: "user", content });
    }
    await backend.createSession(record("long"), events());
    expect((await backend.sizeOf!("long")) / 1024 / 1024).toBeGreaterThan(HEAP_MB);
    const run = await runChild("read-peak.ts", [pgUrl(), schema, "long"], {
      NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}`,
    });
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const read = JSON.parse(run.stdout.trim().split("\n").pop()!) as { count: number; last: number; peakRssMB: number };
    expect(read).toMatchObject({ count: EVENTS, last: EVENTS });
  });
});
