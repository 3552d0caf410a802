import { isAgentTapeError, type SessionInfo } from "../../index.js";
import { UsageError, printJson, printLine, type CliContext, type Command } from "../command.js";
import { formatAge, formatBytes, oneLine, table } from "../output.js";

interface ListedSession extends SessionInfo {
  /** Events in the tape (fewer than lastSequence after a rewind). */
  events: number;
  /** Lines that do not parse; `agent-tape verify` names them. */
  corruptLines: number;
  /** Bytes on disk: log, blobs and records. */
  bytes: number | null;
}

interface UnreadableSession {
  id: string;
  error: { code: string; message: string };
}

export const listCommand: Command = {
  name: "list",
  usage: "list",
  summary: "Sessions, newest first: id, title, events, last activity, size",
  help: `Lists the sessions under the root, the most recently active first.

Columns: ID; TITLE; EVENTS, the events in the tape (after a rewind, fewer than the
last sequence); LAST ACTIVITY, the time of the last event; SIZE, the bytes the session
takes on disk (log, before-snapshots and rewind archives). A session that cannot be
read is listed last with the reason; \`agent-tape verify <id>\` says more.`,
  options: {},

  async run(ctx, args) {
    if (args.positionals.length > 0)
      throw new UsageError(`\`list\` takes no arguments, got "${args.positionals[0]}".`, "list");
    const store = ctx.store();
    const all = await store.list();
    const infos = all.filter((info) => !info.unreadable);
    const unreadable: UnreadableSession[] = all.flatMap((info) =>
      info.unreadable ? [{ id: info.id, error: info.unreadable }] : [],
    );
    // Four sessions read at once: enough to hide each read's latency, not enough to flood the disk.
    const described: (ListedSession | undefined)[] = [];
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < infos.length; i = next++) described[i] = await describe(ctx, infos[i]!);
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    // In list()'s newest-first order.
    const sessions = described.filter((s): s is ListedSession => s !== undefined);

    if (ctx.json) {
      printJson(ctx, [...sessions, ...unreadable]);
      return 0;
    }
    if (sessions.length === 0 && unreadable.length === 0) {
      printLine(ctx.stdout, `No sessions under ${ctx.root}.`);
      return 0;
    }
    const { style } = ctx;
    const rows = [["ID", "TITLE", "EVENTS", "LAST ACTIVITY", "SIZE"].map((h) => style.bold(h))];
    for (const s of sessions) {
      const events = s.corruptLines > 0 ? `${s.events} ${style.red(`+${s.corruptLines} bad`)}` : String(s.events);
      rows.push([
        s.id,
        s.title !== undefined ? oneLine(s.title, 40) : style.dim("-"),
        events,
        formatAge(new Date(s.updatedAt), ctx.now()),
        s.bytes === null ? "?" : formatBytes(s.bytes),
      ]);
    }
    for (const u of unreadable) rows.push([u.id, style.red(`unreadable: ${u.error.code}`), "?", "?", "?"]);
    for (const line of table(rows, ["left", "left", "right", "left", "right"])) printLine(ctx.stdout, line);
    return 0;
  },
};

async function describe(ctx: CliContext, info: SessionInfo): Promise<ListedSession | undefined> {
  const backend = ctx.store().backend;
  let events = 0;
  let corruptLines = 0;
  try {
    for await (const _ of backend.readEvents(info.id, { onCorrupt: () => corruptLines++ })) events++;
  } catch (error) {
    if (isAgentTapeError(error, "SESSION_NOT_FOUND")) return undefined; // deleted while we looked
    throw error;
  }
  const bytes = backend.sizeOf ? await backend.sizeOf(info.id) : null;
  return { ...info, events, corruptLines, bytes };
}
