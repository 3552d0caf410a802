import { UsageError, type Command } from "./command.js";

/**
 * A `util.parseArgs` error rewritten in the CLI's words: its own messages speak of "positional arguments" and
 * quote options oddly. `known` lists the options the verb accepts, for the "no such option" case.
 */
export function optionError(error: NodeJS.ErrnoException, command: Command | undefined, known: string[]): UsageError {
  const option = /'(-{1,2}[^'\s<=]+)/.exec(error.message)?.[1];
  const where = command ? `\`${command.name}\`` : "agent-tape";
  if (error.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && option)
    return new UsageError(
      `${where} has no option ${option}. Its options: ${known.map((name) => `--${name}`).join(", ")}.`,
      command?.name,
    );
  if (error.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && option) {
    const needsValue = /argument missing/.test(error.message);
    return new UsageError(needsValue ? `${option} needs a value.` : `${option} takes no value.`, command?.name);
  }
  return new UsageError(error.message, command?.name);
}
