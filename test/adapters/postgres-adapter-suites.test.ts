import "../helpers/stores-on-postgres.js"; // first: every store the suites below open is on PostgreSQL
import { describe } from "vitest";

// The adapter suites of this folder, each file as written, with their stores on PostgreSQL
// (test/helpers/stores-on-postgres.ts); the unit tier runs the same files on the fs backend.

describe("ai-sdk.test.ts", async () => {
  await import("./ai-sdk.test.js");
});

describe("claude-agent-sdk-conformance.test.ts", async () => {
  await import("./claude-agent-sdk-conformance.test.js");
});

describe("claude-agent-sdk.test.ts", async () => {
  await import("./claude-agent-sdk.test.js");
});

describe("openai-agents-outside-paths.test.ts", async () => {
  await import("./openai-agents-outside-paths.test.js");
});

describe("setup-mistakes.test.ts", async () => {
  await import("./setup-mistakes.test.js");
});
