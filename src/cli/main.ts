#!/usr/bin/env node
import { runCli } from "./run-cli.js";

// `agent-tape show x | head` closes the pipe early: that is the reader being done, not a failure.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

// No top-level await: tsup also builds this entry as CJS, which cannot have one.
void runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  isTTY: { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true },
}).then((code) => {
  process.exitCode = code;
});
