import type { SessionStore } from "../index.js";
import { UsageError } from "./command.js";

/** How many ids an ambiguous prefix lists before "and N more". */
const SHOWN = 5;

/**
 * The session id a user meant by `given`: itself when a session has exactly that id, else the one session whose
 * id starts with it (case-insensitive: ULIDs are shown in capitals but read off a screen in any case). Several
 * matches are a usage error naming them; none returns `given`, so the verb reports SESSION_NOT_FOUND (or an
 * invalid id) as it would have.
 */
export async function resolveSessionPrefix(store: SessionStore, given: string, command: string): Promise<string> {
  const ids = await store.backend.listSessionIds();
  if (ids.includes(given)) return given;
  const wanted = given.toUpperCase();
  const matches = ids.filter((id) => id.toUpperCase().startsWith(wanted)).sort();
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    const more = matches.length > SHOWN ? ` and ${matches.length - SHOWN} more` : "";
    throw new UsageError(
      `"${given}" matches ${matches.length} sessions: ${matches.slice(0, SHOWN).join(", ")}${more}. ` +
        "Give more of the id.",
      command,
    );
  }
  return given;
}
