import { undoRewind, type OnConflict } from "../../index.js";
import { UsageError, flag, printJson, printLine, requireSessionId, stringOption, type Command } from "../command.js";
import { ON_CONFLICT, printConflicts } from "../conflict-output.js";
import { fileCounts, printFileChanges } from "../file-changes.js";
import { printPatches } from "../diff-output.js";
import { plural } from "../output.js";

export const undoCommand: Command = {
  name: "undo",
  usage: "undo <id> [--on-conflict <choice>] [--dry-run] [--diff]",
  summary: "Put back what the last rewind changed",
  help: `Undoes the session's last rewind: the files it changed get their bytes back, and the
events it removed return to the tape (with new sequence numbers, after the rewind
marker). Works only right after a rewind, before anything else is appended. A path
changed outside the session since the rewind wrote it is a conflict: the undo refuses,
unless told what to do with --on-conflict.

Options:
  --on-conflict <choice>
                      refuse (default): change nothing; skip: leave those paths as they are;
                      overwrite: undo them too
  --dry-run           Print what would change and change nothing
  --diff              Also print each changed text file's unified diff (coloured on a terminal)
  --workspace <dir>   Restore into this folder instead of the one the rewind used`,
  options: {
    "dry-run": { type: "boolean" },
    diff: { type: "boolean" },
    workspace: { type: "string" },
    "on-conflict": { type: "string" },
  },

  async run(ctx, args) {
    const id = requireSessionId("undo", args);
    const workspace = stringOption(args, "workspace");
    const dryRun = flag(args, "dry-run");
    const diffs = flag(args, "diff");
    const choice = stringOption(args, "on-conflict");
    if (choice !== undefined && !ON_CONFLICT.includes(choice as OnConflict))
      throw new UsageError(`--on-conflict is refuse, skip or overwrite, not "${choice}".`, "undo");
    const report = await undoRewind(ctx.store(), id, {
      dryRun,
      diffs,
      onConflict: (choice as OnConflict | undefined) ?? "refuse",
      ...(workspace !== undefined && { workspace }),
      onProgress: (step) => ctx.progress.update(`undo ${id}: ${step}`, true),
    });
    ctx.progress.clear();
    if (ctx.json) {
      printJson(ctx, report);
      return 0;
    }
    const { bold } = ctx.style;
    printLine(
      ctx.stdout,
      dryRun
        ? `Dry run: undoing rewind #${report.undoneMarker} of ${bold(id)} would:`
        : `Undid rewind #${report.undoneMarker} of ${bold(id)}:`,
    );
    printFileChanges(ctx, report.changes);
    if (diffs) printPatches(ctx, report.changes);
    printConflicts(ctx.stdout, report.conflicts ?? []);
    const first = report.undoneMarker + 1;
    const last = report.undoneMarker + report.eventsRestored;
    const where =
      report.eventsRestored === 0 ? "" : report.eventsRestored === 1 ? ` (as #${first})` : ` (as #${first}-#${last})`;
    const events = `${plural(report.eventsRestored, "event")} ${dryRun ? "to put back" : `put back${where}`}`;
    if (dryRun) printLine(ctx.stdout, `${fileCounts(report, ctx.style)}; ${events}. Nothing was changed.`);
    else printLine(ctx.stdout, `${fileCounts(report, ctx.style)}; ${events}. Undo marker: #${report.markerSequence}.`);
    return 0;
  },
};
