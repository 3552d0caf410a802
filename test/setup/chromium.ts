// Global setup of the "process" project: the session page's browser test needs Debian's Chromium, which npm
// cannot install. As root (CI, a container), this installs it with apt-get, saying so on stderr; otherwise it
// stops the run with the one command that fixes it. A missing browser fails the run, never skips the test.
import { spawnSync } from "node:child_process";
import { findChromium } from "../helpers/chromium.js";

const install = "apt-get update && apt-get install -y chromium";

export default function setup(): void {
  if (findChromium()) return;
  const root = process.getuid?.() === 0;
  const aptGet = spawnSync("sh", ["-c", "command -v apt-get"]).status === 0;
  if (!root || !aptGet) {
    throw new Error(
      `The session page's browser test needs Chromium, and none is installed. Run: ${root ? "" : "sudo "}${install}` +
        (aptGet ? "" : " (or your system's chromium package)"),
    );
  }
  process.stderr.write(`agent-tape tests: no Chromium found; installing Debian's chromium as root: ${install}\n`);
  const run = spawnSync("sh", ["-c", `${install} >&2`], { stdio: ["ignore", "inherit", "inherit"] });
  if (run.status !== 0 || !findChromium()) {
    throw new Error(`Installing Chromium failed (exit ${run.status}): run ${install} and look at its output`);
  }
}
