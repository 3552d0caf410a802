// `agent-tape/claude-agent-sdk`: the Claude Agent SDK's `SessionStore` on the tape. See docs/ARCHITECTURE.md,
// "Adapters". Types only: nothing here imports the SDK (which needs the Claude Code binary to run).
import { createHash } from "node:crypto";
import { z } from "zod";
import { InvalidArgumentError, SessionStore, isAgentTapeError } from "../../index.js";

/** The SDK's `SessionKey`: one transcript, the main one when `subpath` is absent (subagents have one each). */
export interface ClaudeSessionKey {
  projectKey: string;
  sessionId: string;
  subpath?: string;
}

/** The SDK's `SessionStoreEntry`: one JSONL transcript line, opaque but for `type` and an optional `uuid`. */
export type ClaudeSessionEntry = { type: string; uuid?: string; timestamp?: string; [key: string]: unknown };

/** The event types the adapter writes: one per transcript entry, and the mark of a deleted subagent transcript. */
export const claudeEvents = {
  claude_entry: z.object({ subpath: z.string().optional(), entry: z.looseObject({ type: z.string() }) }),
  claude_subpath_deleted: z.object({ subpath: z.string() }),
};

/** Structurally the SDK's `SessionStore`, copied by hand from its 0.3.332 types (not checked against it). */
export interface ClaudeTapeSessionStore {
  append(key: ClaudeSessionKey, entries: ClaudeSessionEntry[]): Promise<void>;
  load(key: ClaudeSessionKey): Promise<ClaudeSessionEntry[] | null>;
  listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>>;
  delete(key: ClaudeSessionKey): Promise<void>;
  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]>;
  /** The agent-tape session holding a Claude session's transcripts, for rewind, fork and the CLI. */
  tapeSessionId(key: { projectKey: string; sessionId: string }): string;
  /** Closes the store if the adapter opened it. */
  close(): Promise<void>;
}

export interface ClaudeSessionStoreOptions {
  /** An agent-tape root folder; the adapter opens (and closes) its own store there. */
  root?: string;
  /** Or a store of yours; it must know {@link claudeEvents} (`new SessionStore({ root, events: claudeEvents })`). */
  store?: SessionStore<typeof claudeEvents>;
  /** Passed to `create` for new sessions: the workspace checkpoints and rewinds use. */
  workspace?: string;
}

/**
 * The Claude Agent SDK's `SessionStore` (`options.sessionStore`) backed by agent-tape: each Claude session is
 * one tape (its subagents' transcripts on the same tape, tagged by `subpath`), each entry one durable event.
 * An entry's `uuid` is an idempotency key: the SDK retries a batch whose append failed or timed out, and
 * `importSessionToStore` replays, so an entry already on the tape is not written again, across processes too
 * (the check runs under the session's lock against the tape itself).
 */
export function claudeSessionStore(options: ClaudeSessionStoreOptions): ClaudeTapeSessionStore {
  if (!options.store && !options.root)
    throw new InvalidArgumentError("claudeSessionStore() needs a `root` folder or a `store`.");
  const store = options.store ?? new SessionStore({ root: options.root!, events: claudeEvents });
  const owned = options.store === undefined;
  // Per tape: the uuids on it through `seen`, so each append reads only what others wrote since.
  const known = new Map<string, { seen: number; uuids: Set<string> }>();

  const ensureSession = async (id: string, key: ClaudeSessionKey) => {
    if (await store.get(id)) return;
    try {
      await store.create({
        id,
        title: `claude-agent-sdk ${key.sessionId}`,
        ...(options.workspace !== undefined && { workspace: options.workspace }),
      });
    } catch (error) {
      if (!isAgentTapeError(error, "SESSION_EXISTS")) throw error; // another process made it first
    }
  };

  return {
    tapeSessionId: (key) => tapeIdOf(key),

    async append(key, entries) {
      checkKey(key);
      if (entries.length === 0) return;
      const id = tapeIdOf(key);
      await ensureSession(id, key);
      await store.withLock(id, async (session) => {
        let state = known.get(id) ?? { seen: 0, uuids: new Set<string>() };
        const catchUp = async (from: number, restartOnRewind: boolean) => {
          for await (const event of store.read(id, { fromSequence: from, types: ["claude_entry", "session_rewind"] })) {
            // A rewind (or its undo) since the last look changed which entries are on the tape: start over.
            if (event.type === "session_rewind") {
              if (restartOnRewind) return false;
              continue;
            }
            const uuid = event.payload.entry.uuid;
            if (typeof uuid === "string") state.uuids.add(uuid);
          }
          return true;
        };
        if (!(await catchUp(state.seen + 1, true))) {
          state = { seen: 0, uuids: new Set<string>() };
          await catchUp(1, false); // the tape as it is now, whatever rewinds made it
        }
        state.seen = session.lastSequence;
        const fresh: ClaudeSessionEntry[] = [];
        for (const entry of entries) {
          if (typeof entry.uuid === "string") {
            if (state.uuids.has(entry.uuid)) continue;
            state.uuids.add(entry.uuid);
          }
          fresh.push(entry);
        }
        if (fresh.length > 0) {
          const written = await session.appendMany(
            fresh.map((entry) => ({
              type: "claude_entry" as const,
              payload: { ...(key.subpath !== undefined && { subpath: key.subpath }), entry },
            })),
          );
          state.seen = written[written.length - 1]!.sequence;
        }
        known.set(id, state);
      });
    },

    async load(key) {
      checkKey(key);
      const id = tapeIdOf(key);
      if (!(await store.get(id))) return null;
      let entries: ClaudeSessionEntry[] | null = null;
      for await (const event of store.read(id, { types: ["claude_entry", "claude_subpath_deleted"] })) {
        if (event.payload.subpath !== key.subpath) continue;
        if (event.type === "claude_subpath_deleted") entries = null;
        else (entries ??= []).push(event.payload.entry as ClaudeSessionEntry);
      }
      return entries;
    },

    async listSessions(projectKey) {
      const prefix = `${projectPrefix(projectKey)}-`;
      const sessions = await store.list();
      return sessions
        .filter((info) => info.id.startsWith(prefix) && !info.unreadable)
        .map((info) => ({ sessionId: info.id.slice(prefix.length), mtime: Math.floor(Date.parse(info.updatedAt)) }));
    },

    async delete(key) {
      checkKey(key);
      const id = tapeIdOf(key);
      if (key.subpath === undefined) {
        await store.delete(id);
        known.delete(id);
        return;
      }
      // A tape is append-only: a subagent's transcript is hidden by a mark, and a rewind can bring it back.
      if (await store.get(id))
        await store.append(id, { type: "claude_subpath_deleted", payload: { subpath: key.subpath } });
    },

    async listSubkeys(key) {
      checkKey(key);
      const id = tapeIdOf(key);
      if (!(await store.get(id))) return [];
      const live = new Set<string>();
      for await (const event of store.read(id, { types: ["claude_entry", "claude_subpath_deleted"] })) {
        const subpath = event.payload.subpath;
        if (subpath === undefined) continue;
        if (event.type === "claude_subpath_deleted") live.delete(subpath);
        else live.add(subpath);
      }
      return [...live];
    },

    async close() {
      if (owned) await store.close();
    },
  };
}

/**
 * `claude-<16 hex of sha256(projectKey)>-<sessionId>`: a safe agent-tape id whose prefix lists a project's
 * sessions. A session id that is not itself safe (the SDK's are UUIDs) is replaced by its hash.
 */
function tapeIdOf(key: { projectKey: string; sessionId: string }): string {
  const safe = /^[A-Za-z0-9._-]{1,80}$/.test(key.sessionId) ? key.sessionId : `h${sha256(key.sessionId).slice(0, 40)}`;
  return `${projectPrefix(key.projectKey)}-${safe}`;
}

function projectPrefix(projectKey: string): string {
  return `claude-${sha256(projectKey).slice(0, 16)}`;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function checkKey(key: ClaudeSessionKey): void {
  if (typeof key?.projectKey !== "string" || typeof key.sessionId !== "string" || key.sessionId === "")
    throw new InvalidArgumentError("A Claude session key needs `projectKey` and `sessionId` strings.");
  if (key.subpath === "") throw new InvalidArgumentError("An empty `subpath` is invalid: omit it for the main one.");
}
