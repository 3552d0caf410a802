import { readFile } from "node:fs/promises";

/**
 * Bytes this process has read through read() calls so far (Linux /proc/self/io, `rchar`, page cache included).
 * It counts every thread of the process, the test runner's own pipe and module reads too, so a bound on it
 * needs headroom: tests use it to tell "a few percent of a log" from "the whole log, once or more".
 */
export async function bytesRead(): Promise<number> {
  return Number(/^rchar: (\d+)$/m.exec(await readFile("/proc/self/io", "utf8"))![1]);
}
