// A transcript entry's `uuid` as an idempotency key: an entry already on the tape is not written again.
import type { ClaudeSessionEntry, ClaudeSessionKey, ClaudeTapeStore } from "./transcript.js";

/** The uuids on a tape through sequence `seen`. */
interface UuidsOnTape {
  seen: number;
  uuids: Set<string>;
}

/**
 * Appends a transcript's entries, leaving out those whose uuid is on the tape already: the SDK retries a batch
 * whose append failed or timed out, and `importSessionToStore` replays. The check runs under the session's lock
 * against the tape itself, so it holds across processes; per tape the uuids are kept through the sequence last
 * read, so each append reads only what others wrote since.
 */
export function appenderOfNewEntries(store: ClaudeTapeStore) {
  const known = new Map<string, UuidsOnTape>();
  return {
    async append(tapeId: string, key: ClaudeSessionKey, entries: readonly ClaudeSessionEntry[]): Promise<void> {
      await store.withLock(tapeId, async (session) => {
        const state = await uuidsNow(store, tapeId, known.get(tapeId));
        state.seen = session.lastSequence;
        const fresh = notOnTape(entries, state.uuids);
        if (fresh.length > 0) {
          const written = await session.appendMany(
            fresh.map((entry) => ({
              type: "claude_entry" as const,
              payload: { ...(key.subpath !== undefined && { subpath: key.subpath }), entry },
            })),
          );
          state.seen = written[written.length - 1]!.sequence;
          // Only once they are on the tape: a batch that failed is written whole when the SDK retries it.
          for (const entry of fresh) if (typeof entry.uuid === "string") state.uuids.add(entry.uuid);
        }
        known.set(tapeId, state);
      });
    },
    /** Drops what is known of a deleted tape. */
    forget(tapeId: string): void {
      known.delete(tapeId);
    },
  };
}

/**
 * The uuids on the tape now: those known, with what was appended since; read again from the start when a rewind
 * (or its undo) since the last look changed which entries are on the tape.
 */
async function uuidsNow(store: ClaudeTapeStore, tapeId: string, known: UuidsOnTape | undefined) {
  const state = known ?? { seen: 0, uuids: new Set<string>() };
  if (await addUuidsFrom(store, tapeId, state, state.seen + 1, true)) return state;
  const fromStart = { seen: 0, uuids: new Set<string>() };
  await addUuidsFrom(store, tapeId, fromStart, 1, false); // the tape as it is now, whatever rewinds made it
  return fromStart;
}

/** Adds the uuids of the entries from sequence `from` on; false, having stopped, at a rewind if told to. */
async function addUuidsFrom(
  store: ClaudeTapeStore,
  tapeId: string,
  state: UuidsOnTape,
  from: number,
  stopAtRewind: boolean,
): Promise<boolean> {
  for await (const event of store.read(tapeId, { fromSequence: from, types: ["claude_entry", "session_rewind"] })) {
    if (event.type === "session_rewind") {
      if (stopAtRewind) return false;
      continue;
    }
    const uuid = event.payload.entry.uuid;
    if (typeof uuid === "string") state.uuids.add(uuid);
  }
  return true;
}

/** The entries whose uuid is not among `uuids` (an entry without one always), each uuid taken once. */
function notOnTape(entries: readonly ClaudeSessionEntry[], uuids: ReadonlySet<string>): ClaudeSessionEntry[] {
  const taken = new Set<string>();
  const fresh: ClaudeSessionEntry[] = [];
  for (const entry of entries) {
    if (typeof entry.uuid === "string") {
      if (uuids.has(entry.uuid) || taken.has(entry.uuid)) continue;
      taken.add(entry.uuid);
    }
    fresh.push(entry);
  }
  return fresh;
}
