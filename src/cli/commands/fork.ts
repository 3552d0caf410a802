import { forkIntoWorkspace } from "../../index.js";
import {
  eventOption,
  presentOnly,
  printJson,
  printLine,
  requireSessionId,
  stringOption,
  type Command,
} from "../command.js";
import { formatBytes } from "../output.js";

export const forkCommand: Command = {
  name: "fork",
  usage: "fork <id> [--at <seq> | --before-call <toolCallId>] [--workspace <dir>]",
  summary: "Copy a session, whole or up to an event, into a new session (and its files into a new folder)",
  help: `Makes a new session holding the session's events up to <seq> (or up to just before a
tool call; all of them by default), with the same sequence numbers, then a session_fork
event naming the parent; the before-snapshots those events need come along. The parent
is not changed. Prints the new session's id.

With --workspace, the new session gets its own folder, filled with the tracked files as
they were at <seq>: bytes, modes, symlinks (as links, never followed) and folders. Tracked
means what the session's workspace index holds (a session whose shell commands were
captured) plus every path the tape names; ignored and never-captured files are not
copied. The folder must be new (it is made) or empty. The new session's rewinds and
undos then act in that folder only, and the parent's in the parent's only.

Options:
  --at <seq>         Last event of the parent to keep (default: its last event)
  --before-call <toolCallId>
                     Or: keep the events up to just before that tool call
  --workspace <dir>  The new session's own folder, filled with the files as they were at <seq>
  --title <text>     Title of the new session (default: the parent's)
  --id <id>          Id of the new session (default: a generated, time-sortable one)`,
  options: {
    at: { type: "string" },
    "before-call": { type: "string" },
    workspace: { type: "string" },
    title: { type: "string" },
    id: { type: "string" },
  },

  async run(ctx, args) {
    const parentId = requireSessionId("fork", args);
    const { sequence: at, beforeCallId: beforeCall } = eventOption("fork", args, "at");
    const title = stringOption(args, "title");
    const newId = stringOption(args, "id");
    const workspace = stringOption(args, "workspace");
    const options = presentOnly({ atSequence: at, beforeCallId: beforeCall, title, id: newId });
    if (workspace === undefined) {
      const info = await ctx.store().fork(parentId, options);
      if (ctx.json) printJson(ctx, info);
      else
        printLine(
          ctx.stdout,
          `Forked ${parentId} at #${info.parent?.atSequence ?? at} into ${ctx.style.bold(info.id)}`,
        );
      return 0;
    }
    const report = await forkIntoWorkspace(ctx.store(), parentId, { ...options, workspace });
    if (ctx.json) {
      printJson(ctx, report);
      return 0;
    }
    const { session } = report;
    printLine(
      ctx.stdout,
      `Forked ${parentId} at #${session.parent?.atSequence ?? at} into ${ctx.style.bold(session.id)}, ` +
        `its files in ${report.workspace}`,
    );
    printLine(
      ctx.stdout,
      `  ${count(report.files, "file")} (${formatBytes(report.bytes)}), ${count(report.symlinks, "symlink")}, ` +
        `${count(report.folders, "folder")}`,
    );
    for (const skipped of report.skipped) printLine(ctx.stdout, `  skipped  ${skipped.path}  (${skipped.reason})`);
    return 0;
  },
};

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
