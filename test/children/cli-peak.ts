// Child process for the memory tests of the CLI: runs one command in-process and prints its exit code, the
// start of what it printed and the process's peak resident memory, so a command's memory is measured in a
// process of its own (nothing the parent holds counts).
// argv: the CLI's arguments
// Prints one JSON line: { code, stdout, stderr, peakRssMB } (stdout and stderr cut to 4000 characters).
import { runCli } from "../../src/cli/run-cli.js";

let stdout = "";
let stderr = "";
const code = await runCli(process.argv.slice(2), {
  stdout: { write: (text: string) => void (stdout.length < 4000 && (stdout += text)) },
  stderr: { write: (text: string) => void (stderr.length < 4000 && (stderr += text)) },
  env: { NO_COLOR: "1" },
  isTTY: false,
});
const peakRssMB = (process.resourceUsage().maxRSS * 1024) / (1024 * 1024);
process.stdout.write(
  `${JSON.stringify({ code, stdout: stdout.slice(0, 4000), stderr: stderr.slice(0, 4000), peakRssMB })}\n`,
);
