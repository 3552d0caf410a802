import { gc, type GcReport } from "../../index.js";
import { flag, optionalSessionId, printJson, printLine, type Command } from "../command.js";
import { formatBytes, plural, table, type TextSink } from "../output.js";

export const gcCommand: Command = {
  name: "gc",
  usage: "gc [<id>]",
  summary: "Prune unreferenced blobs and old rewind archives; report bytes freed",
  help: `Frees disk space in one session, or in every session under the root: deletes the
before-snapshot blobs that no event references any more (left by a crash or a power
loss), and the rewind archives older than the newest one (only the last rewind can be
undone). Each session is collected under its lock, so it is safe while an agent runs.
A session whose tape cannot be read, or whose lock another process keeps past the
wait, is left alone and reported (exit code 1).

Options:
  --dry-run   Report what would be freed and delete nothing`,
  options: { "dry-run": { type: "boolean" } },

  async run(ctx, args) {
    const only = optionalSessionId("gc", args);
    const dryRun = flag(args, "dry-run");
    const report = await gc(ctx.store(), {
      dryRun,
      ...(only !== undefined && { sessionIds: [only] }),
      onSession: (id, i, total) => ctx.progress.update(`gc: session ${i + 1}/${total} ${id}`),
    });
    ctx.progress.clear();
    // One session named on the command line: its failure is the command's.
    if (only !== undefined && report.failed[0]) throw report.failed[0].error;

    const bytesFreed = report.bytesFreed ?? 0;
    if (ctx.json) {
      printJson(ctx, {
        dryRun,
        bytesFreed,
        blobsPruned: report.orphanBlobs,
        archivesDropped: report.expiredArchives,
        sessions: [
          ...report.sessions.map((c) => ({
            id: c.sessionId,
            blobsPruned: c.orphanBlobs.length,
            archivesDropped: c.expiredArchives,
            bytesFreed: c.bytesFreed ?? 0,
          })),
          ...report.failed.map((f) => ({ id: f.sessionId, error: { code: f.code, message: f.message } })),
        ],
      });
      return report.failed.length > 0 ? 1 : 0;
    }
    printSummary(ctx.stdout, report, only);
    for (const f of report.failed)
      printLine(ctx.stderr, `agent-tape: gc skipped ${f.sessionId}: ${f.message} (${f.code})`);
    return report.failed.length > 0 ? 1 : 0;
  },
};

function printSummary(out: TextSink, report: GcReport, only: string | undefined): void {
  const freed = report.sessions.filter((c) => c.orphanBlobs.length > 0 || c.expiredArchives.length > 0);
  const rows = freed.map((c) => [
    c.sessionId,
    `${plural(c.orphanBlobs.length, "blob")}, ${plural(c.expiredArchives.length, "rewind archive")}`,
    c.bytesFreed === undefined ? "" : formatBytes(c.bytesFreed),
  ]);
  for (const line of table(rows, ["left", "left", "right"])) printLine(out, line);
  const sessions = plural(report.sessions.length, "session");
  if (freed.length === 0) {
    printLine(out, `Nothing to free in ${only !== undefined ? `session ${only}` : sessions}.`);
    return;
  }
  const scope = only !== undefined ? `session ${only}` : `${freed.length} of ${sessions}`;
  const bytes = report.bytesFreed === undefined ? "" : ` ${formatBytes(report.bytesFreed)}`;
  const what = `${plural(report.orphanBlobs, "blob")} and ${plural(report.expiredArchives, "rewind archive")}`;
  const verb = report.dryRun ? "Would free" : "Freed";
  printLine(out, `${verb}${bytes}: ${what} from ${scope}.${report.dryRun ? " Nothing was deleted." : ""}`);
}
