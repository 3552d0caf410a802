import { repair, type RepairReport } from "../../index.js";
import { flag, printJson, printLine, requireSessionId, type Command } from "../command.js";

export const repairCommand: Command = {
  name: "repair",
  usage: "repair <id> [--discard]",
  summary: "Show a rewind intent no operation can act on; finish it, or --discard it",
  help: `A rewind or undo writes its intent (records/rewind-intent.json) before it changes
anything, and the next writer finishes or rolls back one that was interrupted. An intent
that is malformed, or does not fit the tape (edited or planted by hand), is refused by
every operation of the session (STORE_TAMPERED). \`repair\` takes the session's lock and
shows the intent and what is wrong with it. One that is well formed and fits the tape is
finished (or rolled back, if its caller was told it failed), as the next writer would.
One that does not fit is kept unless you pass --discard: then it is dropped, the session
works again, and whatever files the interrupted rewind changed stay as they are.
Exits 1 when an intent is kept, 0 otherwise.

Options:
  --discard   Drop an intent that cannot be acted on`,
  options: {
    discard: { type: "boolean" },
  },

  async run(ctx, args) {
    const id = requireSessionId("repair", args);
    const report = await repair(ctx.store(), id, { discard: flag(args, "discard") });
    if (ctx.json) {
      printJson(ctx, report);
      return report.action === "kept" ? 1 : 0;
    }
    for (const line of describe(report)) printLine(ctx.stdout, line);
    return report.action === "kept" ? 1 : 0;
  },
};

function describe(report: RepairReport): string[] {
  const { sessionId: id, intent } = report;
  if (report.action === "none" || !intent) return [`Session ${id} has no rewind intent: nothing to repair.`];
  const what = [
    intent.kind === "undo" ? "an undo" : intent.kind === "rewind" ? "a rewind" : "an intent of unknown kind",
    intent.targetSequence !== undefined ? ` to #${intent.targetSequence}` : "",
    intent.markerSequence !== undefined ? ` (marker #${intent.markerSequence})` : "",
    intent.files !== undefined ? `, changing ${intent.files} ${intent.files === 1 ? "path" : "paths"}` : "",
    intent.workspace !== undefined ? ` in ${intent.workspace}` : "",
  ].join("");
  const lines = [`Session ${id} has the intent of ${what}.`];
  if (intent.failed !== undefined) lines.push(`Its caller was told it failed: ${intent.failed}`);
  if (intent.problem !== undefined) lines.push(`It cannot be acted on: ${intent.problem}.`);
  switch (report.action) {
    case "finished":
      lines.push("It fits the tape: finished it. The session works again.");
      break;
    case "rolled-back":
      lines.push("It fits the tape: rolled it back (its caller saw it fail). The session works again.");
      break;
    case "kept":
      lines.push(
        "Nothing was changed. Run `agent-tape repair " +
          `${id} --discard\` to drop it: the session works again, and the files it may have changed stay ` +
          "as they are (look at them before you go on).",
      );
      break;
    case "discarded":
      lines.push("Discarded it. The session works again; the files it may have changed were left as they are.");
      break;
  }
  return lines;
}
