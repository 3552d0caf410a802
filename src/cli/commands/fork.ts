import { printJson, printLine, requireSessionId, sequenceOption, stringOption, type Command } from "../command.js";

export const forkCommand: Command = {
  name: "fork",
  usage: "fork <id> [--at <seq>]",
  summary: "Copy a session, whole or up to an event, into a new session",
  help: `Makes a new session holding the session's events up to <seq> (all of them by default),
with the same sequence numbers, then a session_fork event naming the parent; the
before-snapshots those events need come along. The parent is not changed. Prints the
new session's id.

Options:
  --at <seq>       Last event of the parent to keep (default: its last event)
  --title <text>   Title of the new session (default: the parent's)
  --id <id>        Id of the new session (default: a generated, time-sortable one)`,
  options: {
    at: { type: "string" },
    title: { type: "string" },
    id: { type: "string" },
  },

  async run(ctx, args) {
    const parentId = requireSessionId("fork", args);
    const at = sequenceOption("fork", args, "at");
    const title = stringOption(args, "title");
    const newId = stringOption(args, "id");
    const info = await ctx.store().fork(parentId, {
      ...(at !== undefined && { atSequence: at }),
      ...(title !== undefined && { title }),
      ...(newId !== undefined && { id: newId }),
    });
    if (ctx.json) printJson(ctx, info);
    else
      printLine(ctx.stdout, `Forked ${parentId} at #${info.parent?.atSequence ?? at} into ${ctx.style.bold(info.id)}`);
    return 0;
  },
};
