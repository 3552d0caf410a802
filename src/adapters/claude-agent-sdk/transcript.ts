// What a Claude session's transcripts are, and the events they become on the tape. See docs/ARCHITECTURE.md,
// "Adapters".
import { z } from "zod";
import type { SessionStore } from "../../index.js";

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

/** A store that knows the adapter's events. */
export type ClaudeTapeStore = SessionStore<typeof claudeEvents>;
