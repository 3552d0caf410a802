import { createHash } from "node:crypto";
import { expect } from "vitest";
import type { LockedSession, SessionRecord, StorageBackend } from "../backend/types.js";
import { type AgentTapeErrorCode, isAgentTapeError } from "../index.js";
import type { CheckpointPayload, StoredEvent } from "../core/events.js";

// Small builders and assertions every area of the conformance suite shares.

export function record(id: string, title?: string): SessionRecord {
  const r: SessionRecord = { id, createdAt: "2025-01-01T00:00:00.000Z" };
  if (title !== undefined) r.title = title;
  return r;
}

export function event(
  sessionId: string,
  sequence: number,
  payload: unknown = { role: "user", content: `event ${sequence}` },
): StoredEvent {
  return {
    v: 1,
    id: `${sessionId}-event-${sequence}`,
    sessionId,
    sequence,
    type: "message",
    createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, sequence)).toISOString(),
    payload,
  };
}

export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export function blob(text: string): { hash: string; bytes: Uint8Array } {
  const bytes = Buffer.from(text, "utf8");
  return { hash: sha256(bytes), bytes };
}

export function checkpoint(hash: string): CheckpointPayload {
  return {
    tool: "edit_file",
    workspace: "/ws",
    files: [{ path: "a.ts", kind: "blob", blob: hash, bytes: 20, mode: 0o644 }],
  };
}

export function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function readAll(
  backend: StorageBackend,
  id: string,
  options: Parameters<StorageBackend["readEvents"]>[1] = {},
): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  for await (const e of backend.readEvents(id, options)) events.push(e);
  return events;
}

/**
 * The side records a crash can leave, by the names the on-disk format gives them (docs/ARCHITECTURE.md,
 * "On disk"): the suite names them itself, so a rename of either is a format change it catches.
 */
export const BLOBS_IN_FLIGHT_RECORD = "blobs-in-flight";
export const REWIND_INTENT_RECORD = "rewind-intent";

/** Every blob the events' checkpoints and undo snapshots name: what a prune must keep. */
export function blobsNamedBy(events: Iterable<StoredEvent>): Set<string> {
  const named = new Set<string>();
  for (const e of events) {
    const payload = e.payload as {
      files?: { kind: string; blob?: string }[];
      undo?: { files?: { kind: string; blob?: string }[] };
    };
    const files =
      e.type === "session_checkpoint" ? payload.files : e.type === "session_rewind" ? payload.undo?.files : [];
    for (const file of files ?? []) if (file.kind === "blob" && file.blob) named.add(file.blob);
  }
  return named;
}

export async function withLock<T>(
  backend: StorageBackend,
  id: string,
  fn: (locked: LockedSession) => Promise<T>,
): Promise<T> {
  const locked = await backend.lock(id, { waitMs: 10_000 });
  try {
    return await fn(locked);
  } finally {
    await locked.release();
  }
}

/** Awaits `promise`, asserts it rejected with an agent-tape error of `code`, and returns that error. */
export async function expectCode(promise: Promise<unknown>, code: AgentTapeErrorCode): Promise<Error> {
  let outcome: { error: unknown } | undefined;
  try {
    await promise;
  } catch (error) {
    outcome = { error };
  }
  expect(outcome, `expected a ${code} error, but the call succeeded`).toBeDefined();
  const { error } = outcome!;
  expect(isAgentTapeError(error, code), `expected a ${code} error, got ${String(error)}`).toBe(true);
  return error as Error;
}
