import { lstatSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import type { SessionLayout } from "./layout.js";

/**
 * The temp files an atomic replacement cut short left in a session folder: a log rewrite's
 * `.tmp-events.jsonl-<hex>` beside the log, a record's `records/.tmp-<name>-<hex>` (the names
 * `tempPathFor` gives). Each is written and renamed under the session lock, so one found by a lock
 * holder belongs to nobody: a process that failed before it could remove it, or died (docs/ARCHITECTURE.md,
 * "On disk"). Also a record's kept bytes (`records/<name>.jsonl`, a rewind archive's copy of the log)
 * whose record is gone: dropping an archive deletes the record, then the copy, and a crash between the two
 * leaves the copy — unless an intent is pending, whose copy has no record yet. Regular files only, named
 * relative to the session folder. A folder that cannot be listed has none to report.
 */
export async function findLeftovers(layout: SessionLayout, sessionId: string): Promise<string[]> {
  const dir = layout.dir(sessionId);
  const records = layout.records(sessionId);
  const found: string[] = [];
  // Synchronous calls: two small folders listed each time a lock is taken, where two round trips through the
  // pool cost more than the calls (docs/ARCHITECTURE.md, "Batched file work"); a leftover is rare.
  const files = (folder: string, names: string[]) => {
    for (const name of names) {
      let info: ReturnType<typeof lstatSync> | undefined;
      try {
        info = lstatSync(join(folder, name), { throwIfNoEntry: false });
      } catch {
        info = undefined;
      }
      if (info?.isFile()) found.push(join(folder, name).slice(dir.length + 1));
    }
  };
  const logTemp = `.tmp-${basename(layout.log(sessionId))}-`;
  files(
    dir,
    listing(dir).filter((name) => name.startsWith(logTemp)),
  );
  const names = listing(records);
  const present = new Set(names);
  // A pending intent (a rewind's, an undo's) may be about to name a copy it made: not litter yet.
  const pending = names.some((name) => name.endsWith("-intent.json"));
  const copyWithoutRecord = (name: string) =>
    !pending && name.endsWith(".jsonl") && !present.has(`${name.slice(0, -".jsonl".length)}.json`);
  files(
    records,
    names.filter((name) => name.startsWith(".tmp-") || copyWithoutRecord(name)),
  );
  return found;
}

/** A folder's names; none when it cannot be listed. */
function listing(folder: string): string[] {
  try {
    return readdirSync(folder);
  } catch {
    return [];
  }
}
