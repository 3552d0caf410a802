import { RewindMode, rewind, type OnConflict, type RewindOptions, type RewindReport } from "../../index.js";
import {
  type CliContext,
  type Command,
  type ParsedArgs,
  UsageError,
  eventOption,
  flag,
  printJson,
  printLine,
  requireSessionId,
  stringOption,
} from "../command.js";
import { fileCounts, printFileChanges } from "../file-changes.js";
import { printPatches } from "../diff-output.js";
import { plural } from "../output.js";
import { ON_CONFLICT, confirmOverwrite, printConflicts } from "../conflict-output.js";

export const rewindCommand: Command = {
  name: "rewind",
  usage: "rewind <id> --to <seq> | --before-call <toolCallId> [--on-conflict <choice>] [--dry-run] [--diff]",
  summary: "Wind files and conversation back to an event (--mode, --dry-run)",
  help: `Winds the session back to event <seq>: files are restored from their before-snapshots
(or deleted if they did not exist yet), the events after <seq> leave the tape, and a
rewind marker is appended. Prints each path with what happens to it: restore, delete,
or skip (with the reason), and what that does to the file now: +N −M lines, or bytes
for a binary file or one past the diff bounds. \`agent-tape undo <id>\` puts it all back.

A path changed outside the session since it last wrote it (by hand, by another session)
is a conflict: the rewind refuses and changes nothing, unless told what to do with
--on-conflict. At a terminal it lists them and asks before overwriting them instead.

Options:
  --to <seq>          The event to go back to (see \`agent-tape show <id>\`)
  --before-call <toolCallId>
                      Or: go back to just before that tool call
  --on-conflict <choice>
                      refuse (the default when piped): change nothing; skip: leave those paths
                      as they are and rewind the rest; overwrite: rewind them too (their current
                      bytes go into the undo; a terminal still asks)
  --yes               Overwrite conflicting paths without asking
  --mode <mode>       all (default): files and conversation; files: only the workspace;
                      conversation: only the tape
  --dry-run           Print the plan and change nothing
  --diff              Also print each changed text file's unified diff (coloured on a terminal)
  --workspace <dir>   Restore into this folder instead of the session's recorded workspace
  --allow-unrecoverable
                      Go ahead even where content would be overwritten or deleted with no copy kept
                      for undo (a file over 5 MiB, an unreadable one); the dry run lists them`,
  options: {
    to: { type: "string" },
    mode: { type: "string" },
    "dry-run": { type: "boolean" },
    diff: { type: "boolean" },
    workspace: { type: "string" },
    "allow-unrecoverable": { type: "boolean" },
    "before-call": { type: "string" },
    "on-conflict": { type: "string" },
    yes: { type: "boolean" },
  },

  async run(ctx, args) {
    const id = requireSessionId("rewind", args);
    const asked = rewindAsked(ctx, args, id);
    const { options, dryRun, diffs } = asked;
    const conflicts = await conflictsAgreedTo(ctx, id, asked);
    if (conflicts === "declined") return 1;
    const report = await rewind(ctx.store(), id, { ...options, dryRun, diffs, ...conflicts });
    ctx.progress.clear();
    if (ctx.json) printJson(ctx, report);
    else printRewindReport(ctx, id, report, dryRun, diffs);
    return 0;
  },
};

/** What the command line asks of the rewind. */
interface RewindAsked {
  options: RewindOptions;
  /** --on-conflict, when given. */
  choice: OnConflict | undefined;
  dryRun: boolean;
  diffs: boolean;
  yes: boolean;
}

function rewindAsked(ctx: CliContext, args: ParsedArgs, id: string): RewindAsked {
  const target = eventOption("rewind", args, "to", "where to go back to");
  const mode = RewindMode.safeParse(stringOption(args, "mode") ?? "all");
  if (!mode.success)
    throw new UsageError(`--mode is all, files or conversation, not "${stringOption(args, "mode")}".`, "rewind");
  const choice = stringOption(args, "on-conflict");
  if (choice !== undefined && !ON_CONFLICT.includes(choice as OnConflict))
    throw new UsageError(`--on-conflict is refuse, skip or overwrite, not "${choice}".`, "rewind");
  const workspace = stringOption(args, "workspace");
  const options: RewindOptions = {
    ...(target.sequence !== undefined ? { toSequence: target.sequence } : { beforeCallId: target.beforeCallId! }),
    mode: mode.data,
    allowUnrecoverable: flag(args, "allow-unrecoverable"),
    ...(workspace !== undefined && { workspace }),
    onProgress: (step) => ctx.progress.update(`rewind ${id}: ${step}`, true),
  };
  const [dryRun, diffs, yes] = [flag(args, "dry-run"), flag(args, "diff"), flag(args, "yes")];
  return { options, choice: choice as OnConflict | undefined, dryRun, diffs, yes };
}

/**
 * What the rewind does on a conflict. --yes answers the question: overwrite. Without a choice (or --yes), a rewind
 * refuses on a conflict; but where a person is there, they are shown what would be overwritten, and the rewind
 * goes ahead only with those paths as shown ("declined" when they say no).
 */
async function conflictsAgreedTo(
  ctx: CliContext,
  id: string,
  { options, choice, dryRun, yes }: RewindAsked,
): Promise<Pick<RewindOptions, "onConflict" | "overwriteOnly" | "expectedLastSequence"> | "declined"> {
  if (dryRun || yes || !ctx.ask || (choice !== undefined && choice !== "overwrite"))
    return { onConflict: choice ?? (yes ? "overwrite" : "refuse") };
  const preview = await rewind(ctx.store(), id, { ...options, dryRun: true, onConflict: "refuse" });
  ctx.progress.clear();
  const conflicts = preview.conflicts ?? [];
  if (conflicts.length === 0) return { onConflict: "refuse" }; // one appearing meanwhile was not shown: refused
  printConflicts(ctx.stderr, conflicts, true);
  // What the undo could not keep is said before the question, which otherwise promises it a copy.
  const lost = printUnrecoverable(ctx.stderr, preview.changes, true);
  if (!(await confirmOverwrite(ctx.ask, conflicts.length, lost > 0))) {
    printLine(ctx.stderr, "Nothing was changed. To rewind the rest and leave these as they are: --on-conflict skip.");
    return "declined";
  }
  // What the person agreed to was this tape: an event appended while they read is not cut unseen.
  return { onConflict: "overwrite", overwriteOnly: conflicts, expectedLastSequence: preview.lastSequence };
}

/** The rewind's report as text: each path and what happens to it, then what became of the conversation. */
function printRewindReport(ctx: CliContext, id: string, report: RewindReport, dryRun: boolean, diffs: boolean) {
  const target = report.targetSequence;
  if (report.changes.length === 0 && report.eventsRemoved === 0 && report.markerSequence === undefined) {
    printLine(
      ctx.stdout,
      `Nothing to rewind: session ${id} is already as it was at #${target}` +
        `${report.mode === "files" ? " (its files match)" : ""}.`,
    );
    return;
  }
  const { bold } = ctx.style;
  printLine(
    ctx.stdout,
    dryRun
      ? `Dry run: rewinding ${bold(id)} to #${target} (mode ${report.mode}) would:`
      : `Rewound ${bold(id)} to #${target} (mode ${report.mode}):`,
  );
  printFileChanges(ctx, report.changes);
  if (diffs) printPatches(ctx, report.changes);
  printConflicts(ctx.stdout, report.conflicts ?? []);
  printUnrecoverable(ctx.stdout, report.changes, dryRun);
  printNotRewound(ctx.stdout, report);
  const events =
    report.mode === "files"
      ? "the conversation is kept"
      : `${plural(report.eventsRemoved, "event")} ${dryRun ? "to remove" : "removed"}`;
  if (dryRun) {
    const files = report.mode === "conversation" ? "files are left alone" : `${fileCounts(report, ctx.style)}`;
    printLine(ctx.stdout, `${files}; ${events}. Nothing was changed.`);
    return;
  }
  const files = report.mode === "conversation" ? "files left alone" : fileCounts(report, ctx.style);
  printLine(
    ctx.stdout,
    `${files}; ${events}; ${plural(report.blobsPruned, "blob")} pruned. Rewind marker: #${report.markerSequence}.`,
  );
  printLine(ctx.stdout, `Undo it with: agent-tape undo ${id}`);
}

/** What the rewind cannot put back as it was: ignored content commands destroyed, hard-link groups it splits. */
function printNotRewound(
  out: Parameters<typeof printLine>[0],
  report: Pick<RewindReport, "ignoredChanges" | "hardLinksSplit">,
): void {
  const ignored = report.ignoredChanges;
  if (ignored !== undefined) {
    printLine(out, `Not rewound: ignored content the commands removed or changed (never stored), ${ignored.count}:`);
    for (const item of ignored.paths) printLine(out, `  ${item.path} (${item.change})`);
    if (ignored.count > ignored.paths.length) printLine(out, `  and ${ignored.count - ignored.paths.length} more`);
  }
  if (report.hardLinksSplit !== undefined) {
    printLine(out, "Split from their hard-link group (restored as files of their own):");
    for (const path of report.hardLinksSplit) printLine(out, `  ${path}`);
  }
}

/** Content the rewind destroys (or would) with no copy for undo, each with why it was not kept; how many. */
function printUnrecoverable(
  out: Parameters<typeof printLine>[0],
  changes: readonly { unrecoverable?: { path: string; reason: string }[] | undefined }[],
  dryRun: boolean,
): number {
  const lost = changes.flatMap((c) => c.unrecoverable ?? []);
  if (lost.length === 0) return 0;
  printLine(out, `${dryRun ? "Would be lost" : "Lost"} for good (no copy kept for undo; needs --allow-unrecoverable):`);
  for (const item of lost) printLine(out, `  ${item.path} (${item.reason})`);
  return lost.length;
}
