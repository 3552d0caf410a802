// `agent-tape/claude-agent-sdk`: the Claude Agent SDK's `SessionStore` on the tape. See docs/ARCHITECTURE.md,
// "Adapters". Types only: nothing here imports the SDK (its package brings the Claude Code binary).
import { CheckpointStore, InvalidArgumentError, SessionStore, isAgentTapeError } from "../../index.js";
import { assertStoreKnows } from "../store-knows-events.js";
import { appenderOfNewEntries } from "./entries-once.js";
import { type CheckpointHooksOptions, type ClaudeCheckpointHooks, checkpointHooks } from "./hooks.js";
import { mainTranscriptIndex } from "./main-transcripts.js";
import { TITLE_PREFIX, checkKey, safeSessionId, tapeIdOf } from "./tape-ids.js";
import { toolUseEntries } from "./tool-use-entries.js";
import {
  type ClaudeSessionEntry,
  type ClaudeSessionKey,
  type ClaudeSessionSummary,
  type ClaudeTapeStore,
  type FoldSessionSummary,
  claudeEvents,
} from "./transcript.js";

export {
  CLAUDE_TOOL_TOUCHES,
  type CheckpointHooksOptions,
  type ClaudeCheckpointHooks,
  type ClaudeHookCallback,
} from "./hooks.js";
export {
  type ClaudeSessionEntry,
  type ClaudeSessionKey,
  type ClaudeSessionSummary,
  type FoldSessionSummary,
  claudeEvents,
} from "./transcript.js";

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
  const { store, owned } = storeOf(options);
  const fold = options.foldSessionSummary;
  const mainTranscripts = mainTranscriptIndex(store, fold);
  const newEntries = appenderOfNewEntries(store);
  const toolCalls = toolUseEntries();
  // For the hooks, which are told only the Claude session id: its tape, as the keys of appends and loads name it.
  const tapes = new Map<string, string>();

  return {
    tapeSessionId: (key) => tapeIdOf(key),

    async append(key, entries) {
      checkKey(key);
      if (entries.length === 0) return;
      const id = tapeIdOf(key);
      tapes.set(key.sessionId, id);
      await createTapeOnce(store, id, key, options.workspace);
      await newEntries.append(id, key, entries);
      toolCalls.appended(entries);
    },

    async load(key) {
      checkKey(key);
      const id = tapeIdOf(key);
      tapes.set(key.sessionId, id);
      return loadTranscript(store, id, key.subpath);
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
        newEntries.forget(id);
        return;
      }
      // A tape is append-only: a subagent's transcript is hidden by a mark, and a rewind can bring it back.
      if (await store.get(id))
        await store.append(id, { type: "claude_subpath_deleted", payload: { subpath: key.subpath } });
    },

    async listSubkeys(key) {
      checkKey(key);
      return subagentTranscripts(store, tapeIdOf(key));
    },

    checkpointHooks(hookOptions) {
      const context = {
        store,
        checkpoints: options.checkpoints ?? new CheckpointStore(store),
        tapeOf: (claudeSessionId: string) => tapeOfClaudeSession(store, tapes, claudeSessionId),
        callEntry: (toolUseId: string, ms: number) => toolCalls.entryOf(toolUseId, ms),
      };
      return checkpointHooks(context, hookOptions);
    },

    async close() {
      if (owned) await store.close();
    },
  };
}

/** The store given, or one the adapter opens (and closes) at `root`. */
function storeOf(options: ClaudeSessionStoreOptions): { store: ClaudeTapeStore; owned: boolean } {
  if (!options.store && !options.root)
    throw new InvalidArgumentError("claudeSessionStore() needs a `root` folder or a `store`.");
  if (!options.store) return { store: new SessionStore({ root: options.root!, events: claudeEvents }), owned: true };
  assertStoreKnows(
    options.store,
    claudeEvents,
    "claudeSessionStore({ store })",
    "claudeEvents",
    "agent-tape/claude-agent-sdk",
  );
  return { store: options.store, owned: false };
}

/** Creates a Claude session's tape unless it is there; another process creating it first is no failure. */
async function createTapeOnce(store: ClaudeTapeStore, id: string, key: ClaudeSessionKey, workspace?: string) {
  if (await store.get(id)) return;
  try {
    await store.create({
      id,
      title: `${TITLE_PREFIX}${key.sessionId}`,
      ...(workspace !== undefined && { workspace }),
    });
  } catch (error) {
    if (!isAgentTapeError(error, "SESSION_EXISTS")) throw error; // another process made it first
  }
}

/** One transcript's entries (the main one's when `subpath` is absent), null when there is none or it was deleted. */
async function loadTranscript(store: ClaudeTapeStore, id: string, subpath: string | undefined) {
  if (!(await store.get(id))) return null;
  let entries: ClaudeSessionEntry[] | null = null;
  for await (const event of store.read(id, { types: ["claude_entry", "claude_subpath_deleted"] })) {
    if (event.payload.subpath !== subpath) continue;
    if (event.type === "claude_subpath_deleted") entries = null;
    else (entries ??= []).push(event.payload.entry as ClaudeSessionEntry);
  }
  return entries;
}

/** The subagents' transcripts on a tape that are not deleted. */
async function subagentTranscripts(store: ClaudeTapeStore, id: string): Promise<string[]> {
  if (!(await store.get(id))) return [];
  const live = new Set<string>();
  for await (const event of store.read(id, { types: ["claude_entry", "claude_subpath_deleted"] })) {
    const subpath = event.payload.subpath;
    if (subpath === undefined) continue;
    if (event.type === "claude_subpath_deleted") live.delete(subpath);
    else live.add(subpath);
  }
  return [...live];
}

/**
 * The tape of a Claude session the hooks name: the one this store's appends and loads used, or another process's,
 * whose id ends with the session id.
 */
async function tapeOfClaudeSession(store: ClaudeTapeStore, tapes: Map<string, string>, claudeSessionId: string) {
  const known = tapes.get(claudeSessionId);
  if (known !== undefined) return known;
  const suffix = `-${safeSessionId(claudeSessionId)}`;
  const found = (await store.list()).filter((s) => s.id.startsWith("claude-") && s.id.endsWith(suffix));
  if (found.length === 1) return found[0]!.id;
  throw new InvalidArgumentError(
    `No transcript of Claude session "${claudeSessionId}" has reached the store yet, so there is no tape ` +
      'to checkpoint on: pass this store as `sessionStore` to query(), with `sessionStoreFlush: "eager"`.',
  );
}
