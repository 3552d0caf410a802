// README.md's PostgreSQL block runs as written against the test server (test/setup/postgres-server.ts), in the
// schema it names; test/docs/readme-blocks.slow.test.ts accounts for the README's other blocks.
import pg from "pg";
import { afterAll, expect } from "vitest";
import { pgUrl } from "../helpers/postgres.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeDocBlocks, docState } from "./doc-blocks.js";

const dropSchema = async () => {
  const admin = new pg.Pool({ connectionString: pgUrl(), max: 1 });
  await admin.query("DROP SCHEMA IF EXISTS agent_tape CASCADE");
  await admin.end();
};
/** The doc's one folder, made before its first block (its blocks run in order on it), removed after the last. */
let home = "";
afterAll(async () => {
  await dropSchema();
  if (home !== "") await rm(home, { recursive: true, force: true });
});

describeDocBlocks(
  "README.md",
  {
    partial: true,
    notRun: {},
    runs: [
      {
        first: 'import { SessionStore } from "agent-tape";',
        before: "process.env.DATABASE_URL = doc.state.pgUrl;",
        after: `const s = await store.create({ title: "on PostgreSQL" });
await store.append(s.id, { type: "message", payload: { role: "user", content: "hello" } });
doc.state.listed = (await store.list()).map((session) => [session.title, session.lastSequence]);
await store.close();`,
        check: (state) => expect(state.listed).toEqual([["on PostgreSQL", 1]]),
      },
    ],
  },
  async () => {
    await dropSchema();
    docState.pgUrl = pgUrl();
    return (home = await mkdtemp(join(tmpdir(), "agent-tape-readme-pg-")));
  },
);
