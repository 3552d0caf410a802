import { lstat, readdir } from "node:fs/promises";
import { basename, join } from "node:path";
import type { SessionLayout } from "./layout.js";

/**
 * The temp files an atomic replacement cut short left in a session folder: a log rewrite's
 * `.tmp-events.jsonl-<hex>` beside the log, a record's `records/.tmp-<name>-<hex>` (the names
 * `tempPathFor` gives). Each is written and renamed under the session lock, so one found by a lock
 * holder belongs to nobody: a process that failed before it could remove it, or died (docs/ARCHITECTURE.md,
 * "On disk"). Regular files only, named relative to the session folder. A folder that cannot be listed
 * has none to report.
 */
export async function findLeftovers(layout: SessionLayout, sessionId: string): Promise<string[]> {
  const dir = layout.dir(sessionId);
  const logTemp = `.tmp-${basename(layout.log(sessionId))}-`;
  const records = layout.records(sessionId);
  const found: string[] = [];
  for (const [folder, prefix] of [
    [dir, logTemp],
    [records, ".tmp-"],
  ] as const) {
    let names: string[];
    try {
      names = await readdir(folder);
    } catch {
      continue;
    }
    for (const name of names) {
      if (!name.startsWith(prefix)) continue;
      const info = await lstat(join(folder, name)).catch(() => undefined);
      if (info?.isFile()) found.push(join(folder, name).slice(dir.length + 1));
    }
  }
  return found;
}
