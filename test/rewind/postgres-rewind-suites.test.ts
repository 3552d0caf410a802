import "../helpers/stores-on-postgres.js"; // first: every store the suites below open is on PostgreSQL
import { describe } from "vitest";

// More rewind suites of this folder (with postgres-undo-suites.test.ts), each file as written, with their stores
// on PostgreSQL (test/helpers/stores-on-postgres.ts); the unit tier runs the same files on the fs backend. Each
// file in a describe of its own, so its top-level hooks stay with its tests. Left on fs only, one line each:
// - archive-log.slow.test.ts, archive-log-planted.test.ts: the byte-range archive as a file (altered, planted, a
//   symlink or a FIFO in the store's folder);
// - pending-rewind.test.ts: a store folder made unwritable (EPERM);
// - rewind-cost.slow.test.ts, conflicts-cost.slow.test.ts: bytes read from the log file;
// - undo-runs.slow.test.ts: picks its backends itself (fs, memory, fs without byte ranges);
// - kind-changes.slow.test.ts: 60 cases of file kinds in the workspace, the store incidental (the time budget);
// - workspace-lock.test.ts: opens no store.

describe("conflicts.test.ts", async () => {
  await import("./conflicts.test.js");
});

describe("expected-head.test.ts", async () => {
  await import("./expected-head.test.js");
});

describe("failed-rewind.test.ts", async () => {
  await import("./failed-rewind.test.js");
});

describe("folder-snapshots.test.ts", async () => {
  await import("./folder-snapshots.test.js");
});

describe("folder-to-dangling-link.test.ts", async () => {
  await import("./folder-to-dangling-link.test.js");
});

describe("hard-links-owners.test.ts", async () => {
  await import("./hard-links-owners.test.js");
});

describe("plan.test.ts", async () => {
  await import("./plan.test.js");
});

describe("plan-diffs.test.ts", async () => {
  await import("./plan-diffs.test.js");
});

describe("restore-in-the-way.test.ts", async () => {
  await import("./restore-in-the-way.test.js");
});

describe("tampered-store.test.ts", async () => {
  await import("./tampered-store.test.js");
});

describe("fork-into-workspace.slow.test.ts", async () => {
  await import("./fork-into-workspace.slow.test.js");
});
