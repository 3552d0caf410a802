import { builtinEvents, type StoredEvent } from "./events.js";
import { StoreTamperedError } from "./errors.js";

/**
 * The built-in types whose payloads the library acts on: which blobs they keep, which files a rewind
 * writes, what a path was last left as. Reading one that is malformed as if it were whole would be
 * wrong silently (a checkpoint whose `files` is not a list keeps no blob alive, and gc would prune them).
 */
const ACTED_ON: ReadonlySet<string> = new Set(["session_checkpoint", "session_rewind", "session_file_states"]);

// Payloads already found well formed: the same event is often asked about more than once in one walk.
const checked = new WeakSet<object>();

/**
 * Notes `payload` as well formed: what the library itself just checked and built (a rewind's marker, read back
 * from the JSON of what its schema parsed), so the walks that act on it do not parse it again.
 */
export function rememberWellFormed(payload: unknown): void {
  if (typeof payload === "object" && payload !== null) checked.add(payload);
}

/**
 * Why the payload of a built-in event does not fit its schema ("files: expected array, received string"),
 * or undefined when it does or the type is not built in (unknown types are kept as they are). `verify`
 * asks it of every event.
 */
export function builtinPayloadProblem(event: StoredEvent): string | undefined {
  if (!Object.hasOwn(builtinEvents, event.type)) return undefined;
  const payload = event.payload;
  if (typeof payload === "object" && payload !== null && checked.has(payload)) return undefined;
  const parsed = builtinEvents[event.type as keyof typeof builtinEvents].safeParse(payload);
  if (parsed.success) {
    if (typeof payload === "object" && payload !== null) checked.add(payload);
    return undefined;
  }
  return parsed.error.issues
    .slice(0, 3)
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}

/**
 * Throws STORE_TAMPERED when `event` is a checkpoint, a rewind marker or an after-state whose payload does
 * not fit its schema: what it holds cannot be known, so nothing may be decided from it (docs/ARCHITECTURE.md,
 * "Blobs"). Other types are not checked here (`verify` checks them all).
 */
export function assertPayloadActedOn(event: StoredEvent): void {
  if (!ACTED_ON.has(event.type)) return;
  const problem = builtinPayloadProblem(event);
  if (problem !== undefined)
    throw new StoreTamperedError(
      event.sessionId,
      `event #${event.sequence} (${event.type}) is malformed (${problem}), so what it references cannot be read`,
    );
}
