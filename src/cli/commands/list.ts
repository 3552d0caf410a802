import { isAgentTapeError, type SessionInfo } from "../../index.js";
import { UsageError, printJson, printLine, type CliContext, type Command } from "../command.js";
import { formatAge, formatBytes, oneLine, table } from "../output.js";

interface ListedSession extends SessionInfo {
  /** Bytes on disk: log, blobs and records. */
  bytes: number | null;
  /** The same bytes part by part, when the backend can tell. */
  usage?: { log: number; blobs: number; blobCount: number; records: number };
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

Columns: ID; TITLE; LAST #, the sequence of the last event (after a rewind the tape
holds fewer events than that); LAST ACTIVITY, the time of the last event; SIZE, the bytes the session
takes on disk (log, before-snapshots and rewind archives; --json splits it into
usage.log, usage.blobs and usage.records). A session that cannot be
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
    const rows = [["ID", "TITLE", "LAST #", "LAST ACTIVITY", "SIZE"].map((h) => style.bold(h))];
    for (const s of sessions) {
      rows.push([
        s.id,
        s.title !== undefined ? oneLine(s.title, 40) : style.dim("-"),
        `#${s.lastSequence}`,
        formatAge(new Date(s.updatedAt), ctx.now()),
        s.bytes === null ? "?" : formatBytes(s.bytes),
      ]);
    }
    for (const u of unreadable) rows.push([u.id, style.red(`unreadable: ${u.error.code}`), "?", "?", "?"]);
    for (const line of table(rows, ["left", "left", "right", "left", "right"])) printLine(ctx.stdout, line);
    return 0;
  },
};

/**
 * What list adds to a session's info: its size. Nothing here reads the log, so a session costs the
 * same to list however long its tape (`store.list()` reads the record and the last line only);
 * counting events or finding bad lines is `show` and `verify`'s work.
 */
async function describe(ctx: CliContext, info: SessionInfo): Promise<ListedSession | undefined> {
  const backend = ctx.store().backend;
  try {
    if (backend.usage) {
      const { log, blobs, blobCount, records, total } = await backend.usage(info.id);
      return { ...info, bytes: total, usage: { log, blobs, blobCount, records } };
    }
    const bytes = backend.sizeOf ? await backend.sizeOf(info.id) : null;
    return { ...info, bytes };
  } catch (error) {
    if (isAgentTapeError(error, "SESSION_NOT_FOUND")) return undefined; // deleted while we looked
    throw error;
  }
}
