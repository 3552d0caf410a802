#!/usr/bin/env node
import { createInterface } from "node:readline/promises";
import { runCli } from "./run-cli.js";

// `agent-tape show x | head` closes the pipe early: that is the reader being done, not a failure.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

/** A question on stderr, the answer from stdin: only for a terminal (a pipe never gets asked). */
function ask(question: string): Promise<string> {
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  return terminal.question(question).finally(() => terminal.close());
}

// No top-level await: tsup also builds this entry as CJS, which cannot have one.
void runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  isTTY: { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true },
  ...(process.stdin.isTTY === true && { ask }),
}).then((code) => {
  process.exitCode = code;
});
