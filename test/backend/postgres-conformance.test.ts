import pg from "pg";
import { sessionLockKeys } from "../../src/backend/postgres/lock.js";
import type { StorageBackend } from "../../src/backend/types.js";
import { runBackendConformance } from "../../src/testing/index.js";
import { pgBackend, pgUrl, useSchemas } from "../helpers/postgres.js";

// The whole conformance suite on PostgreSQL: one schema per test, dropped after it.
const schemas = useSchemas("conformance");
const schemaOf = new Map<StorageBackend, string>();

runBackendConformance({
  name: "postgres",
  create() {
    const schema = schemas.make();
    const backend = pgBackend(schema);
    schemaOf.set(backend, schema);
    return backend;
  },
  async destroy(backend) {
    await schemas.admin().query(`DROP SCHEMA IF EXISTS "${schemaOf.get(backend)}" CASCADE`);
    schemaOf.delete(backend);
  },
  lacks: {
    discardPartialWrites: "a blob is one INSERT, committed whole or not at all: no write is ever left half done",
  },
  crashLeftStateAbsent:
    "a crash leaves no torn line or half blob: every append and blob write is one transaction, whole or absent",
  // A holder that died: its connection took the lock and then vanished without a word, as a killed process's
  // socket does (the kernel closes it). The server lets the lock go when it sees the connection end.
  async crashedHolder(backend, sessionId) {
    const client = new pg.Client({ connectionString: pgUrl() });
    client.on("error", () => undefined);
    await client.connect();
    await client.query("SELECT pg_advisory_lock($1, $2)", sessionLockKeys(schemaOf.get(backend)!, sessionId));
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  },
});
