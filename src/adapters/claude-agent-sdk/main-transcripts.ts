// Which tapes of a Claude project hold a main transcript, for the SDK's listings.
import { TITLE_PREFIX, projectPrefix } from "./tape-ids.js";
import type {
  ClaudeSessionEntry,
  ClaudeSessionKey,
  ClaudeSessionSummary,
  ClaudeTapeStore,
  FoldSessionSummary,
} from "./transcript.js";

/** A listed Claude session: its id as the SDK gave it, its tape's last write, its main transcript's summary. */
interface ListedSession {
  sessionId: string;
  mtime: number;
  summary: ClaudeSessionSummary | undefined;
}

/**
 * Which tapes of a project hold a main transcript, and (with the SDK's fold) its summary: kept per tape up to the
 * sequence last read, so a listing reads only what was appended since; a rewind on the tape starts it over.
 */
export function mainTranscriptIndex(store: ClaudeTapeStore, fold: FoldSessionSummary | undefined) {
  type Seen = { seen: number; hasMain: boolean; summary: ClaudeSessionSummary | undefined };
  const byTape = new Map<string, Seen>();

  const catchUp = async (tapeId: string, key: ClaudeSessionKey, from: Seen, lastSequence: number, restart: boolean) => {
    const state = { ...from };
    const batch: ClaudeSessionEntry[] = [];
    for await (const event of store.read(tapeId, {
      fromSequence: state.seen + 1,
      toSequence: lastSequence,
      types: ["claude_entry", "session_rewind"],
    })) {
      // A rewind (or its undo) changed which entries are on the tape: fold it again from the start.
      if (event.type === "session_rewind") {
        if (restart) return undefined;
        continue;
      }
      if (event.payload.subpath !== undefined) continue;
      state.hasMain = true;
      if (fold === undefined) break; // that is all a listing without summaries needs
      batch.push(event.payload.entry as ClaudeSessionEntry);
    }
    if (fold !== undefined && batch.length > 0) state.summary = fold(state.summary, key, batch);
    state.seen = lastSequence;
    return state;
  };

  return {
    async list(projectKey: string): Promise<ListedSession[]> {
      const prefix = `${projectPrefix(projectKey)}-`;
      const listed: ListedSession[] = [];
      for (const info of await store.list({ idPrefix: prefix })) {
        if (info.unreadable) continue;
        // The SDK's own id, as the title keeps it: the tape id holds a hash of an id outside its pattern.
        const sessionId = info.title?.startsWith(TITLE_PREFIX)
          ? info.title.slice(TITLE_PREFIX.length)
          : info.id.slice(prefix.length);
        const key = { projectKey, sessionId };
        const fresh = { seen: 0, hasMain: false, summary: undefined };
        let state = byTape.get(info.id) ?? fresh;
        if (state.seen !== info.lastSequence) {
          state =
            (await catchUp(info.id, key, state, info.lastSequence, true)) ??
            (await catchUp(info.id, key, fresh, info.lastSequence, false))!;
          byTape.set(info.id, state);
        }
        if (!state.hasMain) continue;
        const mtime = Math.floor(Date.parse(info.updatedAt));
        const summary = state.summary && { ...state.summary, sessionId, mtime };
        listed.push({ sessionId, mtime, summary });
      }
      return listed;
    },
  };
}
