import "../helpers/stores-on-postgres.js"; // first: every store the suites below open is on PostgreSQL
import { describe } from "vitest";

// The rewind and undo suites of this folder, each file as written, with their stores on PostgreSQL
// (test/helpers/stores-on-postgres.ts); the unit tier runs the same files on the fs backend. Each file in a
// describe of its own, so its top-level hooks stay with its tests.

describe("undo.test.ts", async () => {
  await import("./undo.test.js");
});

describe("rewind.test.ts", async () => {
  await import("./rewind.test.js");
});

describe("two-sessions.test.ts", async () => {
  await import("./two-sessions.test.js");
});

describe("targets.test.ts", async () => {
  await import("./targets.test.js");
});

describe("tool-made-folders.test.ts", async () => {
  await import("./tool-made-folders.test.js");
});

describe("tool-through-link.test.ts", async () => {
  await import("./tool-through-link.test.js");
});

describe("unrecoverable.test.ts", async () => {
  await import("./unrecoverable.test.js");
});
