import "../helpers/stores-on-postgres.js"; // first: every store the suites below open is on PostgreSQL
import { describe } from "vitest";

// The verify and malformed-payload suites of this folder, each file as written, with their stores on PostgreSQL
// (test/helpers/stores-on-postgres.ts); the unit tier runs the same files on the fs and memory backends.
// Not here: repair.test.ts copies the rewind intent's file synchronously mid-rewind and runs the CLI on --root
// (the CLI on PostgreSQL: test/cli/postgres-cli.test.ts).

describe("malformed-payload.test.ts", async () => {
  await import("./malformed-payload.test.js");
});

describe("verify.test.ts", async () => {
  await import("./verify.test.js");
});
