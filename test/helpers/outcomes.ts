import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { isAgentTapeError } from "../../src/index.js";

/** Every file below `dir` with its text, keyed by relative path: to see that nothing there changed. */
export async function filesBelow(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out[path.slice(dir.length + 1)] = await readFile(path, "utf8");
  }
  return out;
}

/** The error code a promise fails with (its text if not an AgentTapeError), or undefined if it succeeds. */
export async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => (isAgentTapeError(error) ? error.code : String(error)),
  );
}

/** Settles within `ms`, or says it hung. */
export async function within<T>(ms: number, promise: Promise<T>): Promise<T | "hung"> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<"hung">((resolve) => (timer = setTimeout(() => resolve("hung"), ms)));
  try {
    return await Promise.race([promise, hung]);
  } finally {
    clearTimeout(timer);
  }
}
