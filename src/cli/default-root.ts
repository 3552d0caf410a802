import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

/**
 * Where sessions live when `--root` is not given: $AGENT_TAPE_ROOT, else the XDG data
 * directory ($XDG_DATA_HOME/agent-tape/sessions), else ~/.local/share/agent-tape/sessions.
 * The XDG spec says a relative $XDG_DATA_HOME is invalid and must be ignored.
 */
export function defaultRoot(env: Record<string, string | undefined>): string {
  if (env.AGENT_TAPE_ROOT) return env.AGENT_TAPE_ROOT;
  if (env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME)) return join(env.XDG_DATA_HOME, "agent-tape", "sessions");
  return join(env.HOME || homedir(), ".local", "share", "agent-tape", "sessions");
}
