import { isAgentTapeError, type SessionStore } from "../index.js";
import type { Progress, Style, TextSink } from "./output.js";

/** The options of one verb, in `util.parseArgs` form. */
export type OptionSpecs = Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }>;

export type OptionValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

export interface ParsedArgs {
  positionals: string[];
  values: OptionValues;
}

/** Everything a verb needs, so it never reaches for `process`. */
export interface CliContext {
  stdout: TextSink;
  stderr: TextSink;
  /** Colours for stdout (off when piped or under NO_COLOR). */
  style: Style;
  /** Status line on stderr (silent unless stderr is a terminal). */
  progress: Progress;
  /** `--json`: print machine-readable output only. */
  json: boolean;
  /** The store root in use. */
  root: string;
  now: () => Date;
  /**
   * Asks the person at the terminal a question and returns the line they typed; undefined when stdin is
   * not a terminal (a script, a pipe), where nothing may wait for an answer.
   */
  ask?: (question: string) => Promise<string>;
  /** The store for `root`, opened on first use and closed when the command ends. */
  store(): SessionStore;
}

export interface Command {
  name: string;
  /** The synopsis after "agent-tape", e.g. "show <id> [--from <seq>] [--to <seq>]". */
  usage: string;
  /** One line for the overall help. */
  summary: string;
  /** What `agent-tape <verb> --help` shows between the usage line and the common options. */
  help: string;
  options: OptionSpecs;
  run(ctx: CliContext, args: ParsedArgs): Promise<number>;
}

/** The user typed something the CLI cannot act on: exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
    this.name = "UsageError";
  }
}

export function printLine(sink: TextSink, line = ""): void {
  sink.write(line + "\n");
}

export function printJson(ctx: CliContext, value: unknown): void {
  ctx.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

/** The single session id a verb acts on. */
export function requireSessionId(command: string, args: ParsedArgs): string {
  const [id, ...extra] = args.positionals;
  if (id === undefined) throw new UsageError(`\`${command}\` needs a session id (see \`agent-tape list\`).`, command);
  if (extra.length > 0) throw new UsageError(`Unexpected argument "${extra[0]}".`, command);
  return id;
}

/** An optional single session id: absent means every session. */
export function optionalSessionId(command: string, args: ParsedArgs): string | undefined {
  const [id, ...extra] = args.positionals;
  if (extra.length > 0)
    throw new UsageError(`Unexpected argument "${extra[0]}": give one session id or none.`, command);
  return id;
}

export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const value = args.values[name];
  return typeof value === "string" ? value : undefined;
}

export function flag(args: ParsedArgs, name: string): boolean {
  return args.values[name] === true;
}

/** A `--name <seq>` option: a sequence number, so a non-negative integer. */
export function sequenceOption(command: string, args: ParsedArgs, name: string): number | undefined {
  const text = stringOption(args, name);
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)))
    throw new UsageError(`--${name} takes an event sequence number (0 or more), not "${text}".`, command);
  return Number(text);
}

/**
 * The event a verb goes to: `--<name> <seq>`, or `--before-call <toolCallId>` (the event just before that call).
 * Both at once is a usage error; so is neither when `needed` says what the event is for.
 */
export function eventOption(
  command: string,
  args: ParsedArgs,
  name: string,
  needed?: string,
): { sequence?: number; beforeCallId?: string } {
  const sequence = sequenceOption(command, args, name);
  const beforeCallId = stringOption(args, "before-call");
  const [seq, call] = [`--${name} <seq>`, "--before-call <toolCallId>"];
  if (needed !== undefined && (sequence === undefined) === (beforeCallId === undefined))
    throw new UsageError(
      `\`${command}\` needs either ${seq} or ${call}: ${needed} (see \`agent-tape show <id>\`).`,
      command,
    );
  if (sequence !== undefined && beforeCallId !== undefined)
    throw new UsageError(`\`${command}\` takes at most one of ${seq} and ${call}.`, command);
  return presentOnly({ sequence, beforeCallId });
}

/**
 * `fields` without those the user did not give: under `exactOptionalPropertyTypes` an option may be left out but
 * not set to `undefined` (the library's own form of this helper is internal; the CLI uses only the public entry).
 */
export function presentOnly<T extends object>(fields: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

/** An error as the CLI reports it: agent-tape's stable code, or the system's (EACCES…). */
export function errorSummary(error: unknown): { code: string; message: string } {
  if (isAgentTapeError(error)) return { code: error.code, message: error.message };
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return {
    code: typeof code === "string" ? code : "ERROR",
    message: error instanceof Error ? error.message : String(error),
  };
}
