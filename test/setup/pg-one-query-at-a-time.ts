import { afterEach } from "vitest";

// For the PostgreSQL projects (vitest.config.ts): `pg` warns when a client is handed a query while it is already
// running one, and its next major version refuses it. Our backend puts the statements of one connection in line
// itself (docs/postgres.md, "The lock"); this turns the warning, should it ever come back, into a failure of the
// test that was running. Node prints a deprecation once per process, so the first one is the one caught.

const QUEUED_QUERY = "already executing a query";
const heard: Error[] = [];
process.on("warning", (warning) => {
  if (warning.name === "DeprecationWarning" && warning.message.includes(QUEUED_QUERY)) heard.push(warning);
});

afterEach(async () => {
  // The warning is emitted on the next tick after the query that caused it: let it arrive.
  await new Promise((resolve) => setImmediate(resolve));
  const warning = heard.shift();
  if (warning)
    throw new Error(`Two queries at once on one pg client (pg warned: ${warning.message})\n${warning.stack ?? ""}`);
});
