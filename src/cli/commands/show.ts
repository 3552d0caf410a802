import { SessionNotFoundError, checkpointChanges } from "../../index.js";
import { printCheckpointFiles } from "../checkpoint-files.js";
import {
  UsageError,
  flag,
  presentOnly,
  printLine,
  requireSessionId,
  sequenceOption,
  type Command,
} from "../command.js";
import { summarizeEvent } from "../event-summary.js";
import { formatTime } from "../output.js";

export const showCommand: Command = {
  name: "show",
  usage: "show <id> [--from <seq>] [--to <seq>] [--diff]",
  summary: "The tape, one line per event (--json: the raw events as JSONL)",
  help: `Prints the session's events in order, one line each: sequence, time (UTC), type,
and a short summary of the payload. Below each checkpoint, the paths it covers with what
its tool did to them (created, modified, deleted) and by how much (+N −M lines): rewind
--to the sequence before a checkpoint to undo its tool. With --json, prints each event
exactly as stored, one JSON object per line (JSONL), for jq and friends.

Options:
  --from <seq>    Start at this sequence
  --to <seq>      Stop after this sequence
  --type <type>   Only events of this type (repeat for several)
  --diff          Also print each checkpoint's unified diffs (coloured on a terminal)`,
  options: {
    from: { type: "string" },
    to: { type: "string" },
    type: { type: "string", multiple: true },
    diff: { type: "boolean" },
  },

  async run(ctx, args) {
    const id = requireSessionId("show", args);
    const from = sequenceOption("show", args, "from");
    const to = sequenceOption("show", args, "to");
    if (from !== undefined && to !== undefined && from > to)
      throw new UsageError(`--from ${from} is after --to ${to}.`, "show");
    // Filtered here, not by read(): a user's own event types are not in this store's schemas.
    const types = args.values.type === undefined ? undefined : new Set(args.values.type as string[]);

    const store = ctx.store();
    const info = await store.get(id);
    if (!info) throw new SessionNotFoundError(id);
    const seqWidth = String(info.lastSequence).length;
    const patches = flag(args, "diff");
    // What each checkpoint changed needs the events after it: worked out once, before printing.
    const changes = ctx.json
      ? new Map()
      : new Map((await checkpointChanges(store, id, { patches })).map((c) => [c.sequence, c]));
    let shown = 0;
    const events = store.read(id, presentOnly({ fromSequence: from, toSequence: to }));
    for await (const event of events) {
      if (types && !types.has(event.type)) continue;
      shown++;
      if (ctx.json) {
        printLine(ctx.stdout, JSON.stringify(event));
        continue;
      }
      const type = event.type === "error" ? ctx.style.red(event.type.padEnd(19)) : event.type.padEnd(19);
      printLine(
        ctx.stdout,
        `${String(event.sequence).padStart(seqWidth)}  ${ctx.style.dim(formatTime(event.createdAt))}  ` +
          `${type}  ${summarizeEvent(event)}`,
      );
      const files = changes.get(event.sequence);
      if (files) printCheckpointFiles(ctx, files, seqWidth + 2, patches);
    }
    if (shown === 0 && !ctx.json) {
      const filtered = from !== undefined || to !== undefined || types !== undefined;
      printLine(ctx.stdout, filtered ? "No events match." : `Session ${id} has no events yet.`);
    }
    const pending = info.pendingRewind;
    if (pending && !ctx.json)
      printLine(
        ctx.stdout,
        pending.state === "failed"
          ? ctx.style.red(`A rewind of this session is pending: it failed (${pending.reason}). `) +
              "The tape above is as it was before it. The next write rolls it back once the cause is fixed, " +
              "and is refused with REWIND_FAILED until then."
          : ctx.style.red(`A rewind of this session is pending: ${pending.reason}. `) +
              "The tape and the files above are as they are on disk, maybe half way; the next write finishes it.",
      );
    return 0;
  },
};
