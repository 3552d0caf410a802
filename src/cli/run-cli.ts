import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { SessionStore, isAgentTapeError, type LockWait } from "../index.js";
import type { StorageBackend } from "./store-location.js";
import {
  UsageError,
  errorSummary,
  printLine,
  type CliContext,
  type Command,
  type OptionSpecs,
  type ParsedArgs,
} from "./command.js";
import { exportCommand } from "./commands/export.js";
import { forkCommand } from "./commands/fork.js";
import { gcCommand } from "./commands/gc.js";
import { listCommand } from "./commands/list.js";
import { rewindCommand } from "./commands/rewind.js";
import { showCommand } from "./commands/show.js";
import { undoCommand } from "./commands/undo.js";
import { verifyCommand } from "./commands/verify.js";
import { repairCommand } from "./commands/repair.js";
import { defaultRoot } from "./default-root.js";
import { optionError } from "./option-error.js";
import { commandHelp, overallHelp } from "./help.js";
import { Progress, makeStyle, terminalSink, terminalText, wantsColour, type TextSink } from "./output.js";
import { resolveSessionPrefix } from "./session-prefix.js";
import { openPostgresStore, parseStoreUrl } from "./store-location.js";
import { VERSION } from "./version.js";

export interface CliIO {
  stdout: TextSink;
  stderr: TextSink;
  /** Decides the default root and NO_COLOR. */
  env: Record<string, string | undefined>;
  /** Whether stdout / stderr are terminals: colour follows stdout, progress follows stderr. A boolean sets both. */
  isTTY?: boolean | { stdout?: boolean; stderr?: boolean };
  /** The clock for "last activity". @default () => new Date() */
  now?: () => Date;
  /**
   * Asks a question on the terminal and resolves to the line typed. Give it only when stdin is a
   * terminal: without it the CLI never asks (a rewind with conflicts then refuses).
   */
  ask?: (question: string) => Promise<string>;
}

export const commands: readonly Command[] = [
  listCommand,
  showCommand,
  rewindCommand,
  undoCommand,
  forkCommand,
  exportCommand,
  gcCommand,
  verifyCommand,
  repairCommand,
];

const GLOBAL_OPTIONS: OptionSpecs = {
  root: { type: "string" },
  store: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
};

/**
 * Runs `agent-tape` with `argv` (the arguments after the program name) and returns the exit
 * code: 0 ok, 1 problems found or the operation failed, 2 usage error. Never throws and never
 * touches `process`, so tests run it in-process against temp roots.
 */
export async function runCli(argv: readonly string[], given: CliIO): Promise<number> {
  const tty = typeof given.isTTY === "boolean" ? { stdout: given.isTTY, stderr: given.isTTY } : (given.isTTY ?? {});
  const wantsJson = argv.includes("--json");
  // Every line for a person goes through terminalText: a control sequence from the tape or the workspace is
  // shown, never acted on. --json is for programs and stays exact (JSON escapes what it must).
  const io: CliIO = wantsJson
    ? given
    : {
        ...given,
        stdout: terminalSink(given.stdout),
        stderr: terminalSink(given.stderr),
        ...(given.ask !== undefined && { ask: (question: string) => given.ask!(terminalText(question)) }),
      };
  let store: SessionStore | undefined;
  let command: Command | undefined;
  let place: Place | undefined;
  let backend: StorageBackend | undefined;
  try {
    const located = locateCommand(argv);
    command = located.command;
    const args = parseFor(command, located.rest);
    const values = args.values;
    if (values.version === true) {
      printLine(io.stdout, VERSION);
      return 0;
    }
    if (values.help === true || located.help) {
      io.stdout.write(command ? commandHelp(command) : overallHelp(commands));
      return 0;
    }
    if (!command) {
      // No command at all: show what there is, but as a usage error, so a script notices.
      io.stderr.write(overallHelp(commands));
      return 2;
    }
    place = await openPlace(values, io.env, command.name);
    backend = place.backend;
    const storeOptions = { ...(place.backend ? { backend: place.backend } : { root: place.where }) };
    const ctx: CliContext = {
      stdout: io.stdout,
      stderr: io.stderr,
      style: makeStyle(wantsColour(tty.stdout ?? false, io.env)),
      progress: new Progress(io.stderr, tty.stderr ?? false),
      json: values.json === true,
      root: place.where,
      now: io.now ?? (() => new Date()),
      ...(io.ask !== undefined && { ask: io.ask }),
      store: () => (store ??= new SessionStore({ ...storeOptions, onLockWait: tellLockWait(io.stderr) })),
    };
    // Every verb but `list` takes a session id first; let the user type as much of it as is unique.
    const given = args.positionals[0];
    if (command.name !== "list" && given !== undefined)
      args.positionals[0] = await resolveSessionPrefix(ctx.store(), given, command.name);
    return await command.run(ctx, args);
  } catch (error) {
    return reportError(io, error, command, wantsJson, place);
  } finally {
    await store?.close().catch(() => undefined);
    // A store given a backend leaves it open: the backend the CLI made is the CLI's to close.
    await backend?.close().catch(() => undefined);
  }
}

/** Where the sessions are, as the CLI names it, and the flag that names it so. */
interface Place {
  where: string;
  flag: "--root" | "--store";
  backend?: StorageBackend;
}

/**
 * Where the sessions are: `--store postgres://…` (a PostgreSQL database), `--root <dir>` (a folder), else
 * $AGENT_TAPE_STORE, else $AGENT_TAPE_ROOT and the XDG default. A flag beats a variable; both flags at once are
 * a usage error. `where` is the place as the CLI names it in messages (a URL's password hidden).
 */
async function openPlace(values: ParsedArgs["values"], env: CliIO["env"], command: string): Promise<Place> {
  const rootOption = values.root;
  const storeOption = values.store;
  if (rootOption === "") throw new UsageError("--root needs a folder.");
  if (storeOption === "") throw new UsageError("--store needs a postgres:// URL.");
  if (typeof rootOption === "string" && typeof storeOption === "string")
    throw new UsageError("Give --root (a folder) or --store (a database), not both.", command);
  const url = typeof storeOption === "string" ? storeOption : rootOption === undefined ? env.AGENT_TAPE_STORE : "";
  if (url) {
    const location = parseStoreUrl(url, typeof storeOption === "string" ? "--store" : "$AGENT_TAPE_STORE");
    return { where: location.shown, flag: "--store", backend: await openPostgresStore(location) };
  }
  const root = resolve(typeof rootOption === "string" ? rootOption : defaultRoot(env));
  // A mistyped --root would otherwise read as an empty store ("No sessions"): say what is wrong instead.
  if (typeof rootOption === "string" && !(await isFolder(root)))
    throw new UsageError(`--root ${root} does not exist (or is not a folder).`, command);
  return { where: root, flag: "--root" };
}

/**
 * The verb is the first positional argument, wherever it stands among the global options
 * (`agent-tape --root x list` and `agent-tape list --root x` both work). Only the global
 * options are known before the verb, so this pass is lenient; the strict pass follows.
 * `help <verb>` reads as `<verb> --help`.
 */
function locateCommand(argv: readonly string[]): { command: Command | undefined; rest: string[]; help: boolean } {
  const { tokens } = parseArgs({
    args: [...argv],
    options: GLOBAL_OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const positionals = tokens.filter((t) => t.kind === "positional");
  let first = positionals[0];
  if (!first) return { command: undefined, rest: [...argv], help: false };
  let help = false;
  if (first.value === "help") {
    help = true;
    const named = positionals[1];
    if (!named) return { command: undefined, rest: [], help };
    first = named;
  }
  const command = commands.find((c) => c.name === first.value);
  if (!command)
    throw new UsageError(`Unknown command "${first.value}". Commands: ${commands.map((c) => c.name).join(", ")}.`);
  return { command, rest: help ? [] : argv.filter((_, i) => i !== first.index), help };
}

function parseFor(command: Command | undefined, args: string[]): ParsedArgs {
  try {
    const parsed = parseArgs({
      args,
      options: { ...GLOBAL_OPTIONS, ...(command?.options ?? {}) },
      strict: true,
      allowPositionals: true,
    });
    return { positionals: parsed.positionals, values: parsed.values as ParsedArgs["values"] };
  } catch (error) {
    // parseArgs's own errors (unknown option, missing value) are the user's typing: exit 2.
    if (
      typeof (error as NodeJS.ErrnoException).code === "string" &&
      (error as NodeJS.ErrnoException).code!.startsWith("ERR_PARSE_ARGS")
    )
      throw optionError(
        error as NodeJS.ErrnoException,
        command,
        Object.keys({ ...command?.options, ...GLOBAL_OPTIONS }),
      );
    throw error;
  }
}

async function isFolder(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (error) {
    if (["ENOENT", "ENOTDIR"].includes((error as NodeJS.ErrnoException).code ?? "")) return false;
    throw error;
  }
}

function reportError(
  io: CliIO,
  error: unknown,
  command: Command | undefined,
  json: boolean,
  place: Place | undefined,
): number {
  if (error instanceof UsageError) {
    const helpFor = error.command ?? command?.name;
    if (json) io.stderr.write(JSON.stringify({ error: { code: "USAGE", message: error.message } }) + "\n");
    else
      io.stderr.write(
        `agent-tape: ${error.message}\nRun \`agent-tape ${helpFor ? `${helpFor} ` : ""}--help\` for usage.\n`,
      );
    return 2;
  }
  const { code, message } = cliWords(errorSummary(error), error, place?.where);
  if (json) {
    // A script can act on the conflicts (path, what changed) without parsing the message.
    const conflicts = isAgentTapeError(error, "REWIND_CONFLICT") ? { conflicts: error.conflicts } : {};
    io.stderr.write(JSON.stringify({ error: { code, message, ...conflicts } }) + "\n");
  } else if (isAgentTapeError(error)) {
    io.stderr.write(`agent-tape: ${message} (${code})\n`);
    if (code === "LOG_CORRUPT") io.stderr.write("Run `agent-tape verify` to list every damaged line and blob.\n");
    if (code === "SESSION_NOT_FOUND" && place !== undefined)
      io.stderr.write(`Run \`agent-tape ${place.flag} ${place.where} list\` to see the sessions there.\n`);
  } else io.stderr.write(`agent-tape: ${message}${message.includes(code) ? "" : ` (${code})`}\n`);
  // A bad id or argument handed to the library is the user's input, like a bad option.
  return isAgentTapeError(error, "INVALID_SESSION_ID") || isAgentTapeError(error, "INVALID_ARGUMENT") ? 2 : 1;
}

/** The library speaks to programs ("create it with store.create()"); a terminal user gets the CLI's own words. */
function cliWords(
  summary: { code: string; message: string },
  error: unknown,
  root: string | undefined,
): { code: string; message: string } {
  if (isAgentTapeError(error, "SESSION_NOT_FOUND") && root !== undefined)
    return {
      code: summary.code,
      message: `no session "${error.sessionId}" under ${root}`,
    };
  if (isAgentTapeError(error, "REWIND_CONFLICT")) {
    const shown = error.conflicts.slice(0, 10).map((c) => `${c.path} (${c.change})`);
    if (error.conflicts.length > 10) shown.push(`and ${error.conflicts.length - 10} more`);
    return {
      code: summary.code,
      message:
        `session ${error.sessionId} has paths changed outside it since it last wrote them: ${shown.join(", ")}. ` +
        "Nothing was changed. Rerun with --on-conflict skip to leave them as they are, or --on-conflict " +
        "overwrite (their current bytes go into the undo)",
    };
  }
  return summary;
}

/**
 * A wait for another process's lock, said on stderr: once when it starts, and again when its holder is
 * found dead (the lock is then taken over once stale), so a silent 5 s pause has a reason.
 */
function tellLockWait(stderr: CliIO["stderr"]): (wait: LockWait) => void {
  let said: string | undefined;
  return (wait) => {
    const holder =
      wait.holderPid === undefined
        ? "held by another process"
        : `held by process ${wait.holderPid}${wait.holderAlive === false ? " (no longer running)" : ""}`;
    if (holder === said) return;
    said = holder;
    const stale = (wait.staleInMs / 1000).toFixed(1);
    stderr.write(
      `waiting for the lock on session ${wait.sessionId}, ${holder}; taken over in ${stale} s if it stops\n`,
    );
  };
}
