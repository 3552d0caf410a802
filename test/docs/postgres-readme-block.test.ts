// README.md's PostgreSQL block runs as written against the test server (test/setup/postgres-server.ts), in the
// schema it names; test/docs/readme-blocks.test.ts accounts for the README's other blocks.
import pg from "pg";
import { afterAll, expect } from "vitest";
import { pgUrl } from "../helpers/postgres.js";
import { TempRoots } from "../helpers/temp-root.js";
import { describeDocBlocks, docState } from "./doc-blocks.js";

const dropSchema = async () => {
  const admin = new pg.Pool({ connectionString: pgUrl(), max: 1 });
  await admin.query("DROP SCHEMA IF EXISTS agent_tape CASCADE");
  await admin.end();
};
const temps = new TempRoots();
afterAll(async () => {
  await dropSchema();
  await temps.removeAll();
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
    return temps.make("agent-tape-readme-pg-");
  },
);
