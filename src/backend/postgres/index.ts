// The `agent-tape/postgres` entry: the PostgreSQL backend. Its own entry, so `pg` (an optional peer dependency)
// is loaded only by programs that use it.
export { postgresBackend, DEFAULT_SCHEMA } from "./postgres-backend.js";
export type { PostgresBackendOptions } from "./postgres-backend.js";
export { SCHEMA_VERSION } from "./schema.js";
