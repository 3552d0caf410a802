// named-fs: recorded workspaces are real paths in the library's form (docs/ARCHITECTURE.md, "Names and depths").
import { realpath } from "../core/named-fs.js";
import { resolve } from "node:path";
import type { SignalOption, StorageBackend } from "../backend/types.js";
import { isAgentTapeError } from "../core/errors.js";
import type { CheckpointPayload, RewindPayload, StoredEvent } from "../core/events.js";
import { signalOf } from "../core/defined-fields.js";

/**
 * The workspace the tape itself recorded, as opposed to session.json's, which anyone who can write the session
 * folder can edit (docs/ARCHITECTURE.md, "Confinement"). Captures hold session.json to it before taking a
 * snapshot; rewinds before writing.
 */

/** The workspace an event took snapshots in, if it holds any: a checkpoint, a "files" rewind's undo snapshot. */
export function workspaceRecordedBy(event: StoredEvent): string | undefined {
  if (event.type === "session_checkpoint") {
    const payload = event.payload as CheckpointPayload;
    return payload.files.length > 0 ? payload.workspace : undefined;
  }
  if (event.type !== "session_rewind") return undefined;
  const { mode, undo } = event.payload as RewindPayload;
  return mode === "files" && undo && undo.files.length > 0 ? undo.workspace : undefined;
}

/** True when the tape recorded one workspace and `named` is that folder (as named, or by its real path). */
export async function isTheRecordedWorkspace(named: string, recorded: ReadonlySet<string>): Promise<boolean> {
  if (recorded.size !== 1) return false;
  const [only] = recorded;
  if (resolve(named) === only) return true;
  try {
    return (await realpath(named)) === only;
  } catch {
    return false; // a folder that cannot be resolved is not the one recorded
  }
}

/** Events in the last window read; each window further back is twice as long. */
const FIRST_WINDOW = 256;

/**
 * The workspace of the latest event that recorded one, or undefined when the tape holds no snapshot yet.
 * Read back from the end in windows twice as long each time: the cost follows the distance from the end to
 * the last snapshot, not the tape's length. Takes no lock; a rewind cutting the tape meanwhile makes it look
 * again (TAPE_REWOUND), a few times at most.
 */
export async function lastRecordedWorkspace(
  backend: StorageBackend,
  sessionId: string,
  lastSequence: () => Promise<number>,
  options: SignalOption,
): Promise<string | undefined> {
  const signal = signalOf(options);
  for (let attempt = 1; ; attempt++) {
    try {
      for (let hi = await lastSequence(), span = FIRST_WINDOW; hi >= 1; hi -= span, span *= 2) {
        const lo = Math.max(1, hi - span + 1);
        let latest: string | undefined;
        for await (const event of backend.readEvents(sessionId, { fromSequence: lo, toSequence: hi, ...signal }))
          latest = workspaceRecordedBy(event) ?? latest;
        if (latest !== undefined) return latest;
      }
      return undefined;
    } catch (error) {
      if (attempt < 3 && isAgentTapeError(error, "TAPE_REWOUND")) continue;
      throw error;
    }
  }
}
