import "../helpers/stores-on-postgres.js"; // first: every store the suites below open is on PostgreSQL
import { describe } from "vitest";

// The verify, malformed-payload and repair suites of this folder, each file as written, with their stores on
// PostgreSQL (test/helpers/stores-on-postgres.ts); the unit tier runs the same files on the fs and memory backends.

describe("malformed-payload.test.ts", async () => {
  await import("./malformed-payload.test.js");
});

describe("verify.test.ts", async () => {
  await import("./verify.test.js");
});

describe("repair.test.ts", async () => {
  await import("./repair.test.js");
});
