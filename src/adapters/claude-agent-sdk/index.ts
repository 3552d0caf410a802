// `agent-tape/claude-agent-sdk`: the Claude Agent SDK's `SessionStore` on the tape. See docs/ARCHITECTURE.md,
// "Adapters". Types only: nothing here imports the SDK (its package brings the Claude Code binary).
import { createHash } from "node:crypto";
import { z } from "zod";
import { CheckpointStore, InvalidArgumentError, SessionStore, isAgentTapeError } from "../../index.js";
import { assertStoreKnows } from "../store-knows-events.js";
import { type CheckpointHooksOptions, type ClaudeCheckpointHooks, checkpointHooks } from "./hooks.js";

export {
  CLAUDE_TOOL_TOUCHES,
  type CheckpointHooksOptions,
  type ClaudeCheckpointHooks,
  type ClaudeHookCallback,
} from "./hooks.js";

/** The SDK's `SessionKey`: one transcript, the main one when `subpath` is absent (subagents have one each). */
export interface ClaudeSessionKey {
  projectKey: string;
  sessionId: string;
  subpath?: string;
}

/** The SDK's `SessionStoreEntry`: one JSONL transcript line, opaque but for `type` and an optional `uuid`. */
export type ClaudeSessionEntry = { type: string; uuid?: string; timestamp?: string; [key: string]: unknown };

/**
 * The SDK's `SessionSummaryEntry`: what `listSessionSummaries` returns per session. `data` belongs to the SDK (its
 * `foldSessionSummary` makes it); `mtime` is the one `listSessions` reports for the session.
 */
export interface ClaudeSessionSummary {
  sessionId: string;
  mtime: number;
  data: Record<string, unknown>;
}

/** The SDK's `foldSessionSummary`: pure, and folding two batches in turn gives what folding them at once gives. */
export type FoldSessionSummary = (
  prev: ClaudeSessionSummary | undefined,
  key: ClaudeSessionKey,
  entries: ClaudeSessionEntry[],
  options?: { mtime?: number },
) => ClaudeSessionSummary;

/** The event types the adapter writes: one per transcript entry, and the mark of a deleted subagent transcript. */
export const claudeEvents = {
  claude_entry: z.object({ subpath: z.string().optional(), entry: z.looseObject({ type: z.string() }) }),
  claude_subpath_deleted: z.object({ subpath: z.string() }),
};

/**
 * Structurally the SDK's `SessionStore`, copied by hand from its types; the tests run it as the `sessionStore` of
 * the real SDK 0.3.333 (test/adapters/claude-agent-sdk-crash.claude.test.ts).
 */
export interface ClaudeTapeSessionStore {
  append(key: ClaudeSessionKey, entries: ClaudeSessionEntry[]): Promise<void>;
  load(key: ClaudeSessionKey): Promise<ClaudeSessionEntry[] | null>;
  /** The project's sessions that have a main transcript (one holding only a subagent's is left out). */
  listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>>;
  /**
   * Present when the SDK's `foldSessionSummary` was passed: each listed session's main transcript folded by it,
   * with the `mtime` `listSessions` reports, so the SDK lists without loading every session. Folded from the tape
   * (each tape only from where this store last looked, again from the start after a rewind), so a rewind or
   * another process's appends are in it.
   */
  listSessionSummaries?(projectKey: string): Promise<ClaudeSessionSummary[]>;
  delete(key: ClaudeSessionKey): Promise<void>;
  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]>;
  /** The agent-tape session holding a Claude session's transcripts, for rewind, fork and the CLI. */
  tapeSessionId(key: { projectKey: string; sessionId: string }): string;
  /**
   * Hooks for the SDK's `options.hooks` that checkpoint Claude Code's own tools on this store's tapes, fail-closed
   * (a call whose snapshot fails is denied): Write, Edit, MultiEdit, NotebookEdit by the file they name, Bash by
   * the workspace index. Each call's `tool_call` carries the SDK's tool_use id, so
   * `rewind(store, tapeSessionId(key), { beforeCallId })` takes it. Pass `sessionStoreFlush: "eager"` to `query()`
   * too, so each call's transcript entry is on the tape before its checkpoint. Needs `workspace`.
   */
  checkpointHooks(options?: CheckpointHooksOptions): ClaudeCheckpointHooks;
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
  /** For {@link ClaudeTapeSessionStore.checkpointHooks}. @default a new CheckpointStore on the store */
  checkpoints?: CheckpointStore;
  /**
   * The SDK's own `foldSessionSummary` (`import { foldSessionSummary } from "@anthropic-ai/claude-agent-sdk"`):
   * with it the store has `listSessionSummaries`. The adapter never imports the SDK itself.
   * @default none: the SDK lists by `listSessions` and a `load` per session
   */
  foldSessionSummary?: FoldSessionSummary;
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
  if (options.store)
    assertStoreKnows(
      options.store,
      claudeEvents,
      "claudeSessionStore({ store })",
      "claudeEvents",
      "agent-tape/claude-agent-sdk",
    );
  const owned = options.store === undefined;
  const fold = options.foldSessionSummary;
  const mainTranscripts = mainTranscriptIndex(store, fold);
  // Per tape: the uuids on it through `seen`, so each append reads only what others wrote since.
  const known = new Map<string, { seen: number; uuids: Set<string> }>();
  // For the hooks, which are told only the Claude session id: its tape, as the keys of appends and loads name it.
  const tapes = new Map<string, string>();
  // The tool_use ids of assistant entries this process appended, and the hooks waiting for one.
  const calls = new Set<string>();
  const callWaiters = new Map<string, (() => void)[]>();
  const noteCalls = (entries: readonly ClaudeSessionEntry[]) => {
    for (const entry of entries)
      for (const id of toolUseIds(entry)) {
        calls.add(id);
        for (const wake of callWaiters.get(id) ?? []) wake();
        callWaiters.delete(id);
      }
  };

  const ensureSession = async (id: string, key: ClaudeSessionKey) => {
    if (await store.get(id)) return;
    try {
      await store.create({
        id,
        title: `${TITLE_PREFIX}${key.sessionId}`,
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
      tapes.set(key.sessionId, id);
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
      noteCalls(entries);
    },

    async load(key) {
      checkKey(key);
      const id = tapeIdOf(key);
      tapes.set(key.sessionId, id);
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
      const listed = await mainTranscripts.list(projectKey);
      return listed.map(({ sessionId, mtime }) => ({ sessionId, mtime }));
    },

    ...(fold !== undefined && {
      async listSessionSummaries(projectKey: string) {
        const listed = await mainTranscripts.list(projectKey);
        return listed.map(({ sessionId, mtime, summary }) => ({ sessionId, mtime, data: summary?.data ?? {} }));
      },
    }),

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

    checkpointHooks(hookOptions) {
      const checkpoints = options.checkpoints ?? new CheckpointStore(store);
      return checkpointHooks(
        {
          store,
          checkpoints,
          async tapeOf(claudeSessionId) {
            const known = tapes.get(claudeSessionId);
            if (known !== undefined) return known;
            // Another process's appends: the tape whose id ends with the session id.
            const suffix = `-${safeSessionId(claudeSessionId)}`;
            const found = (await store.list()).filter((s) => s.id.startsWith("claude-") && s.id.endsWith(suffix));
            if (found.length === 1) return found[0]!.id;
            throw new InvalidArgumentError(
              `No transcript of Claude session "${claudeSessionId}" has reached the store yet, so there is no tape ` +
                'to checkpoint on: pass this store as `sessionStore` to query(), with `sessionStoreFlush: "eager"`.',
            );
          },
          callEntry(toolUseId, ms) {
            if (calls.has(toolUseId)) return Promise.resolve();
            return new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, ms);
              const list = callWaiters.get(toolUseId) ?? [];
              list.push(() => {
                clearTimeout(timer);
                resolve();
              });
              callWaiters.set(toolUseId, list);
            });
          },
        },
        hookOptions,
      );
    },

    async close() {
      if (owned) await store.close();
    },
  };
}

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
function mainTranscriptIndex(store: SessionStore<typeof claudeEvents>, fold: FoldSessionSummary | undefined) {
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
      for (const info of await store.list()) {
        if (!info.id.startsWith(prefix) || info.unreadable) continue;
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

/** The title a tape of the adapter is created with: it keeps the SDK's session id as given. */
const TITLE_PREFIX = "claude-agent-sdk ";

/** The ids of the tool_use blocks of an assistant transcript entry. */
function toolUseIds(entry: ClaudeSessionEntry): string[] {
  const content = (entry.message as { content?: unknown } | undefined)?.content;
  if (entry.type !== "assistant" || !Array.isArray(content)) return [];
  return content.flatMap((block: { type?: unknown; id?: unknown }) =>
    block?.type === "tool_use" && typeof block.id === "string" ? [block.id] : [],
  );
}

/**
 * `claude-<16 hex of sha256(projectKey)>-<sessionId>`: a safe agent-tape id whose prefix lists a project's
 * sessions. A session id that is not itself safe (the SDK's are UUIDs) is replaced by its hash.
 */
function tapeIdOf(key: { projectKey: string; sessionId: string }): string {
  return `${projectPrefix(key.projectKey)}-${safeSessionId(key.sessionId)}`;
}

function safeSessionId(sessionId: string): string {
  return /^[A-Za-z0-9._-]{1,80}$/.test(sessionId) ? sessionId : `h${sha256(sessionId).slice(0, 40)}`;
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
