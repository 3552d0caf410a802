import type { Command } from "./command.js";

const ROOT_HELP = `  --root <dir>   Where sessions live. Default: $AGENT_TAPE_ROOT, else
                 $XDG_DATA_HOME/agent-tape/sessions, else ~/.local/share/agent-tape/sessions
  --store <url>  Sessions in PostgreSQL instead: postgres://user@host:port/db[?schema=name]
                 (needs the pg package). Default: $AGENT_TAPE_STORE, when --root is not given`;

const JSON_HELP = "  --json         Machine-readable output on stdout (errors as JSON on stderr)";

const EXIT_CODES_HELP = `Exit codes:
  0  success
  1  problems found (verify), or the operation failed
  2  usage error: unknown command or option, missing or bad argument`;

export function commandHelp(command: Command): string {
  return `Usage: agent-tape ${command.usage}

${command.help.trimEnd()}

Options for every command:
${ROOT_HELP}
${JSON_HELP}
  -h, --help     Show this help

${EXIT_CODES_HELP}
`;
}

export function overallHelp(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.usage.length));
  const lines = commands.map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`);
  return `agent-tape: look at, check and wind back the sessions an agent recorded with agent-tape.

Usage: agent-tape <command> [options]

Commands:
${lines.join("\n")}

Options for every command:
${ROOT_HELP}
${JSON_HELP}
  -h, --help     Show help; \`agent-tape <command> --help\` for one command
  -v, --version  Print the version

${EXIT_CODES_HELP}
`;
}
