import { pgBackend, useSchemas } from "../helpers/postgres.js";
import { runStoreSuites } from "../helpers/store-suites.js";

// The shared capture, rewind, undo, recovery, gc/verify and adapter suite (test/helpers/store-suites.ts) on
// PostgreSQL: one schema per test, all dropped when the file ends.
const schemas = useSchemas("store_suites");
runStoreSuites({ name: "postgres", open: async () => pgBackend(schemas.make()) });
