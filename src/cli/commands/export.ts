import { rename, rm, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { SessionNotFoundError, checkpointChanges, renderSessionPage, type StoredEvent } from "../../index.js";
import { UsageError, printJson, printLine, requireSessionId, stringOption, type Command } from "../command.js";
import { formatBytes, plural } from "../output.js";

export const exportCommand: Command = {
  name: "export",
  usage: "export <id> --html <file>",
  summary: "Write the session as one HTML page to read in a browser",
  help: `Writes the session as one self-contained HTML file: no script, no network, nothing
else to copy along. It shows the timeline of the tape (messages, tool calls and results,
checkpoints, rewinds and undos, forks), each event with its sequence (what \`rewind --to\`
takes), and each checkpoint opens to the files its tool changed, with their diffs.

Options:
  --html <file>   Where to write the page (replaced if it exists)`,
  options: {
    html: { type: "string" },
  },

  async run(ctx, args) {
    const id = requireSessionId("export", args);
    const out = stringOption(args, "html");
    if (out === undefined || out === "")
      throw new UsageError("`export` needs --html <file>: where to write the page.", "export");

    const store = ctx.store();
    const session = await store.get(id);
    if (!session) throw new SessionNotFoundError(id);
    ctx.progress.update(`export ${id}: reading the tape`, true);
    const events: StoredEvent[] = [];
    for await (const event of store.read(id)) events.push(event);
    ctx.progress.update(`export ${id}: diffing checkpoints`, true);
    const checkpoints = await checkpointChanges(store, id, { patches: true });
    const page = renderSessionPage({ session, events, checkpoints, generatedAt: ctx.now().toISOString() });
    ctx.progress.clear();

    // Written beside the target and renamed over it: a reader never opens half a page.
    const path = resolve(out);
    const temp = `${path}.${process.pid}.tmp`;
    try {
      await writeFile(temp, page);
      await rename(temp, path);
    } catch (error) {
      await rm(temp, { force: true });
      throw cannotWrite(path, error);
    }
    const bytes = Buffer.byteLength(page);
    if (ctx.json) printJson(ctx, { file: path, bytes, events: events.length, checkpoints: checkpoints.length });
    else
      printLine(
        ctx.stdout,
        `Wrote ${path} (${formatBytes(bytes)}): ${plural(events.length, "event")}, ` +
          `${plural(checkpoints.length, "checkpoint")}. Open it in a browser.`,
      );
    return 0;
  },
};

/**
 * The system's error, reworded to name the file the user asked for (not the temp file beside it) and what to do.
 * Its code (ENOENT, EISDIR, EACCES…) stays the one the CLI prints; the original error is the cause.
 */
function cannotWrite(path: string, error: unknown): Error {
  const code = (error as NodeJS.ErrnoException).code;
  const why =
    code === "ENOENT"
      ? "its folder does not exist"
      : code === "EISDIR"
        ? "it is a folder"
        : code === "EACCES" || code === "EPERM"
          ? "permission denied"
          : (error as Error).message;
  const reworded = new Error(`Cannot write ${path}: ${why}. Pass --html a file path in a folder you can write.`, {
    cause: error,
  });
  return Object.assign(reworded, { code });
}
