import { gc, type GcReport, type RetentionPolicy } from "../../index.js";
import {
  UsageError,
  flag,
  optionalSessionId,
  printJson,
  printLine,
  stringOption,
  type Command,
  type ParsedArgs,
} from "../command.js";
import { formatBytes, plural, table, type TextSink } from "../output.js";

export const gcCommand: Command = {
  name: "gc",
  usage: "gc [<id>] [--max-age-days <n>] [--keep-newest <n>] [--max-bytes <n>] [--checkpoint-max-age-days <n>]",
  summary: "Prune unreferenced blobs and old rewind archives, apply a retention policy; report bytes freed",
  help: `Frees disk space in one session, or in every session under the root: deletes the
before-snapshot blobs that no event references any more (left by a crash or a power
loss), and the rewind archives older than the newest one (only the last rewind can be
undone). Each session is collected under its lock, so it is safe while an agent runs.
A session whose tape cannot be read, or whose lock another process keeps past the
wait, is left alone and reported (exit code 1).

Retention (any of these turns it on; sessions whose lock a live process holds are kept):
  --max-age-days <n>             Delete sessions with no event for more than n days
  --keep-newest <n>              Keep the n most recently active sessions, delete the rest
  --max-bytes <n>                Delete the least recently active sessions until the rest
                                 take at most n bytes (suffixes k, M, G: 500M)
  --checkpoint-max-age-days <n>  Drop checkpoints older than n days (their blobs); the
                                 conversation stays, and files can no longer be rewound
                                 to before them

Options:
  --dry-run   Report what would be freed and delete nothing`,
  options: {
    "dry-run": { type: "boolean" },
    "max-age-days": { type: "string" },
    "keep-newest": { type: "string" },
    "max-bytes": { type: "string" },
    "checkpoint-max-age-days": { type: "string" },
  },

  async run(ctx, args) {
    const only = optionalSessionId("gc", args);
    const dryRun = flag(args, "dry-run");
    const retention = retentionFrom(args);
    const report = await gc(ctx.store(), {
      dryRun,
      ...(retention && { retention }),
      ...(only !== undefined && { sessionIds: [only] }),
      onSession: (id, i, total) => ctx.progress.update(`gc: session ${i + 1}/${total} ${id}`),
    });
    ctx.progress.clear();
    // One session named on the command line: its failure is the command's.
    if (only !== undefined && report.failed[0]) throw report.failed[0].error;

    const bytesFreed = report.bytesFreed ?? 0;
    const retained = report.retention;
    if (ctx.json) {
      printJson(ctx, {
        dryRun,
        bytesFreed,
        ...(retained && {
          retention: {
            deleted: retained.deleted,
            held: retained.held,
            trimmed: retained.trimmed.map((t) => ({ ...t, blobsDropped: t.blobsDropped.length })),
            failed: retained.failed.map((f) => ({ id: f.sessionId, error: { code: f.code, message: f.message } })),
          },
        }),
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
    if (retained) printRetention(ctx.stdout, report);
    printSummary(ctx.stdout, report, only);
    for (const f of retained?.failed ?? [])
      printLine(ctx.stderr, `agent-tape: retention skipped ${f.sessionId}: ${f.message} (${f.code})`);
    for (const f of report.failed)
      printLine(ctx.stderr, `agent-tape: gc skipped ${f.sessionId}: ${f.message} (${f.code})`);
    return report.failed.length > 0 || (retained?.failed.length ?? 0) > 0 ? 1 : 0;
  },
};

const RETENTION_FLAGS = {
  "max-age-days": "maxAgeDays",
  "keep-newest": "keepNewest",
  "max-bytes": "maxTotalBytes",
  "checkpoint-max-age-days": "checkpointMaxAgeDays",
} as const;

/** The policy the retention flags describe, or undefined when none is given. */
function retentionFrom(args: ParsedArgs): RetentionPolicy | undefined {
  let policy: RetentionPolicy | undefined;
  for (const [name, key] of Object.entries(RETENTION_FLAGS)) {
    const text = stringOption(args, name);
    if (text === undefined) continue;
    const value = key === "maxTotalBytes" ? parseBytes(text) : Number(text);
    const whole = key === "keepNewest" || key === "maxTotalBytes";
    if (!Number.isFinite(value) || value < 0 || (whole && !Number.isSafeInteger(value)))
      throw new UsageError(
        `--${name} needs ${whole ? "a whole number" : "a number"} of at least 0, got "${text}".`,
        "gc",
      );
    policy = { ...policy, [key]: value };
  }
  return policy;
}

function parseBytes(text: string): number {
  const match = /^(\d+(?:\.\d+)?)([kKmMgG]?)$/.exec(text.trim());
  if (!match) return Number.NaN;
  const unit = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[match[2]!.toLowerCase() as "" | "k" | "m" | "g"];
  return Math.round(Number(match[1]) * unit);
}

function printRetention(out: TextSink, report: GcReport): void {
  const retained = report.retention!;
  const verb = report.dryRun ? "Would delete" : "Deleted";
  for (const d of retained.deleted) {
    const size = d.bytes === undefined ? "" : `, ${formatBytes(d.bytes)}`;
    printLine(out, `${verb} session ${d.sessionId} (${RETENTION_WORDS[d.reason]}${size}).`);
  }
  for (const h of retained.held) printLine(out, `Kept session ${h.sessionId}: a live process holds its lock.`);
  const drop = report.dryRun ? "Would drop" : "Dropped";
  for (const t of retained.trimmed) {
    const size = t.bytesFreed === undefined ? "" : `, ${formatBytes(t.bytesFreed)}`;
    printLine(
      out,
      `${drop} ${plural(t.checkpointsDropped, "checkpoint")} through #${t.horizon} of session ${t.sessionId} ` +
        `(${plural(t.blobsDropped.length, "blob")}${size}).`,
    );
  }
}

const RETENTION_WORDS = { age: "inactive too long", count: "beyond --keep-newest", bytes: "over --max-bytes" };

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
