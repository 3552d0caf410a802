import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { childCommand } from "./children.js";

// Counts the system calls a child script makes between two markers it sets, through a real strace run:
// no fs mock, the kernel's own record. The child calls `markTraced("start")` and `markTraced("end")`
// (test/helpers/trace-marker.ts).

const repository = fileURLToPath(new URL("../..", import.meta.url));

/** The system calls that wait for the disk. */
export const DURABLE_CALLS = ["fsync", "fdatasync", "syncfs"] as const;

/** The file-system calls the cost tests count: every one a thread-pool round trip from Node. */
export const FS_CALLS = [
  ...DURABLE_CALLS,
  "statx",
  "newfstatat",
  "openat",
  "close",
  "readlink",
  "pread64",
  "pwrite64",
  "rename",
  "mkdir",
  "fchmod",
  "unlink",
  "getdents64",
] as const;

export interface TracedRun {
  /** Each traced system call made between the markers, by name, in every thread and child process. */
  calls: Map<string, number>;
  /**
   * How many of them another thread made than the process's first (Node's main thread): libuv's thread pool,
   * each call one round trip from the event loop, or a worker.
   */
  offMainThread: number;
  /** With `fdPaths`: strace's lines between the markers, each descriptor followed by its path (`-y`). */
  lines: string[];
  stdout: string;
}

/** Runs a child script under `strace -f`, tracing `syscalls` (and the markers), and counts them between the markers. */
export async function traceChild(
  script: string,
  args: readonly string[],
  syscalls: readonly string[],
  dir: string,
  options: { fdPaths?: boolean } = {},
) {
  const out = join(dir, "strace.txt");
  const traced = ["access", "faccessat", "faccessat2", ...syscalls].join(",");
  const child = spawn(
    "strace",
    [
      "-f",
      "-qq",
      ...(options.fdPaths ? ["-y"] : []),
      "-e",
      `trace=${traced}`,
      "-o",
      out,
      ...childCommand(script, args),
    ],
    { cwd: repository, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  const [code] = await once(child, "close");
  if (code !== 0) throw new Error(`traced child exited with ${code}:\n${stderr}`);
  const lines = (await readFile(out, "utf8")).split("\n");
  const start = lines.findIndex((line) => line.includes("/agent-tape-trace-start"));
  const end = lines.findIndex((line) => line.includes("/agent-tape-trace-end"));
  if (start === -1 || end < start) throw new Error(`the child set no markers; stderr:\n${stderr}`);
  const calls = new Map<string, number>();
  const mainThread = /^(\d+)\s/.exec(lines[0] ?? "")?.[1];
  let offMainThread = 0;
  for (const line of lines.slice(start + 1, end)) {
    const [, thread, name] = /^(\d+)\s+(\w+)\(/.exec(line) ?? []; // a call's start; "<... resumed>" lines are its end
    if (!name || !syscalls.includes(name)) continue;
    calls.set(name, (calls.get(name) ?? 0) + 1);
    if (thread !== mainThread) offMainThread++;
  }
  const between = options.fdPaths ? lines.slice(start + 1, end) : [];
  return { calls, offMainThread, lines: between, stdout } satisfies TracedRun;
}
