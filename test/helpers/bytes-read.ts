import { readFile } from "node:fs/promises";
import { isMainThread } from "node:worker_threads";

/**
 * Bytes this process has read through read() calls so far (Linux /proc/self/io, `rchar`, page cache included).
 * It counts every thread of the process, the test runner's own pipe and module reads too, so a bound on it
 * needs headroom: tests use it to tell "a few percent of a log" from "the whole log, once or more".
 * In a worker thread it would also count the files the other workers run at the same time (a rewind's
 * 0.23 of a log where 0.1 was the bound, in CI): the files that use it are `*.slow.test.ts`, a tier that runs in
 * processes, and here it refuses to count anywhere else.
 */
export async function bytesRead(): Promise<number> {
  if (!isMainThread)
    throw new Error("bytesRead() counts the whole process: run this file in a process pool (a *.slow.test.ts)");
  return Number(/^rchar: (\d+)$/m.exec(await readFile("/proc/self/io", "utf8"))![1]);
}
