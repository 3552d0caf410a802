// Which tape holds a Claude session: its id, made from the SDK's project key and session id.
import { createHash } from "node:crypto";
import { InvalidArgumentError } from "../../index.js";
import type { ClaudeSessionKey } from "./transcript.js";

/** The title a tape of the adapter is created with: it keeps the SDK's session id as given. */
export const TITLE_PREFIX = "claude-agent-sdk ";

/**
 * `claude-<16 hex of sha256(projectKey)>-<sessionId>`: a safe agent-tape id whose prefix lists a project's
 * sessions. A session id that is not itself safe (the SDK's are UUIDs) is replaced by its hash.
 */
export function tapeIdOf(key: { projectKey: string; sessionId: string }): string {
  return `${projectPrefix(key.projectKey)}-${safeSessionId(key.sessionId)}`;
}

export function safeSessionId(sessionId: string): string {
  return /^[A-Za-z0-9._-]{1,80}$/.test(sessionId) ? sessionId : `h${sha256(sessionId).slice(0, 40)}`;
}

export function projectPrefix(projectKey: string): string {
  return `claude-${sha256(projectKey).slice(0, 16)}`;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

export function checkKey(key: ClaudeSessionKey): void {
  if (typeof key?.projectKey !== "string" || typeof key.sessionId !== "string" || key.sessionId === "")
    throw new InvalidArgumentError("A Claude session key needs `projectKey` and `sessionId` strings.");
  if (key.subpath === "") throw new InvalidArgumentError("An empty `subpath` is invalid: omit it for the main one.");
}
