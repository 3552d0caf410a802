import "../helpers/stores-on-postgres.js"; // first: every store the suites below open is on PostgreSQL
import { describe } from "vitest";

// The capture suites of this folder, each file as written, with their stores on PostgreSQL
// (test/helpers/stores-on-postgres.ts); the unit tier runs the same files on the fs backend.

describe("checkpoint-store.test.ts", async () => {
  await import("./checkpoint-store.test.js");
});

describe("tool-wrapper.test.ts", async () => {
  await import("./tool-wrapper.test.js");
});

describe("tool-outside-paths.test.ts", async () => {
  await import("./tool-outside-paths.test.js");
});

describe("workspace-real-path.test.ts", async () => {
  await import("./workspace-real-path.test.js");
});
