import { isAgentTapeError } from "../../core/errors.js";
import { forEachLimited } from "../../core/bounded-concurrency.js";
import { listArchives } from "../../blobs/archives.js";
import { findUnreferencedBlobs } from "../../blobs/prune.js";
import type { SessionStore } from "../../session/session-store.js";
import { errorSummary, flag, optionalSessionId, printJson, printLine, type Command } from "../command.js";
import { formatBytes, plural, table } from "../output.js";

interface Collected {
  id: string;
  blobsPruned: number;
  /** Rewind archives dropped: every one but the newest, which the last rewind's undo needs. */
  archivesDropped: string[];
  bytesFreed: number;
}

interface Failed {
  id: string;
  error: { code: string; message: string };
}

export const gcCommand: Command = {
  name: "gc",
  usage: "gc [<id>]",
  summary: "Prune unreferenced blobs and old rewind archives; report bytes freed",
  help: `Frees disk space in one session, or in every session under the root: deletes the
before-snapshot blobs that no event references any more (left by a crash or a power
loss), and the rewind archives older than the newest one (only the last rewind can be
undone). Each session is collected under its lock, so it is safe while an agent runs.
A session whose tape cannot be read is left alone and reported (exit code 1).

Options:
  --dry-run   Report what would be freed and delete nothing`,
  options: { "dry-run": { type: "boolean" } },

  async run(ctx, args) {
    const only = optionalSessionId("gc", args);
    const dryRun = flag(args, "dry-run");
    const store = ctx.store();
    const ids = only !== undefined ? [only] : (await store.backend.listSessionIds()).sort();
    const collected: Collected[] = [];
    const failed: Failed[] = [];
    for (const [i, id] of ids.entries()) {
      ctx.progress.update(`gc: session ${i + 1}/${ids.length} ${id}`);
      try {
        collected.push(await collect(store, id, dryRun));
      } catch (error) {
        if (only !== undefined) throw error;
        // A stray folder under the root is not a session; everything else is worth reporting.
        if (isAgentTapeError(error, "INVALID_SESSION_ID") || isAgentTapeError(error, "SESSION_NOT_FOUND")) continue;
        failed.push({ id, error: errorSummary(error) });
      }
    }
    ctx.progress.clear();

    const bytesFreed = collected.reduce((sum, c) => sum + c.bytesFreed, 0);
    const blobs = collected.reduce((sum, c) => sum + c.blobsPruned, 0);
    const archives = collected.reduce((sum, c) => sum + c.archivesDropped.length, 0);
    if (ctx.json) {
      printJson(ctx, {
        dryRun,
        bytesFreed,
        blobsPruned: blobs,
        archivesDropped: archives,
        sessions: [...collected, ...failed],
      });
      return failed.length > 0 ? 1 : 0;
    }

    const freed = collected.filter((c) => c.blobsPruned > 0 || c.archivesDropped.length > 0);
    const rows = freed.map((c) => [
      c.id,
      `${plural(c.blobsPruned, "blob")}, ${plural(c.archivesDropped.length, "rewind archive")}`,
      formatBytes(c.bytesFreed),
    ]);
    for (const line of table(rows, ["left", "left", "right"])) printLine(ctx.stdout, line);
    const scope = only !== undefined ? `session ${only}` : `${freed.length} of ${plural(collected.length, "session")}`;
    if (freed.length === 0)
      printLine(
        ctx.stdout,
        `Nothing to free in ${only !== undefined ? `session ${only}` : plural(collected.length, "session")}.`,
      );
    else
      printLine(
        ctx.stdout,
        `${dryRun ? "Would free" : "Freed"} ${formatBytes(bytesFreed)}: ` +
          `${plural(blobs, "blob")} and ${plural(archives, "rewind archive")} from ${scope}.` +
          `${dryRun ? " Nothing was deleted." : ""}`,
      );
    for (const f of failed)
      printLine(ctx.stderr, `agent-tape: gc skipped ${f.id}: ${f.error.message} (${f.error.code})`);
    return failed.length > 0 ? 1 : 0;
  },
};

/**
 * Under the session lock, so no capture sits between writing a blob and the event that
 * indexes it: such a blob would look unreferenced and be lost.
 */
async function collect(store: SessionStore, id: string, dryRun: boolean): Promise<Collected> {
  const backend = store.backend;
  return store.withLock(id, async (locked) => {
    const [, ...older] = await listArchives(backend, id);
    // Measured before anything goes, so a dry run reports the same figure as the real run.
    const unreferenced = await findUnreferencedBlobs(backend, id, { ignoreArchives: older });
    let bytesFreed = 0;
    for (const hash of unreferenced) bytesFreed += (await backend.readBlob(id, hash))?.length ?? 0;
    for (const name of older) {
      const archive = await backend.readRecord(id, name);
      if (archive !== undefined) bytesFreed += Buffer.byteLength(JSON.stringify(archive));
    }
    if (dryRun) return { id, blobsPruned: unreferenced.length, archivesDropped: older, bytesFreed };

    for (const name of older) await locked.deleteRecord(name);
    await forEachLimited(unreferenced, 8, (hash) => locked.deleteBlob(hash));
    const blobsPruned = unreferenced.length;
    return { id, blobsPruned, archivesDropped: older, bytesFreed };
  });
}
