// Maintenance, retention: bounds a store's disk by policy (docs/ARCHITECTURE.md, "Retention").
import type { SignalOption } from "../backend/types.js";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { InvalidArgumentError, isAgentTapeError } from "../core/errors.js";
import { findUnreferencedBlobs } from "../blobs/prune.js";
import { readHorizonMark, raiseHorizon } from "../blobs/retention-horizon.js";
import { listArchives, readArchive } from "../blobs/archives.js";
import type { StorageBackend } from "../backend/types.js";
import type { SessionInfo, SessionStore } from "../session/session-store.js";
import { summarizeError, type ErrorSummary } from "./failure.js";
import { type MaintenancePass, freeFound, underSessionLock } from "./free-found.js";
import type { RetentionPolicy } from "../core/retention-policy.js";
import { registerRetentionOnOpen } from "../session/retention-on-open.js";
import { signalOf } from "../core/defined-fields.js";

/**
 * What to keep. Every limit is optional and they combine: a session goes when any says so. A
 * session is judged by its last activity (`updatedAt`); sessions whose lock a live process holds
 * are never deleted. A policy with no limit set changes nothing.
 */
export type { RetentionPolicy };

export interface RetentionOptions extends SignalOption {
  /** The sessions to consider (counts and bytes are over these). @default every session of the store */
  sessionIds?: readonly string[];
  /** Report what would go and change nothing. @default false */
  dryRun?: boolean;
  /** The clock the ages are measured against. @default new Date() */
  now?: Date;
  /**
   * How long to wait for a session's lock before judging it held by a live process and leaving it.
   * A lock whose holder died is taken over once stale (`lockStaleMs`). @default 0
   */
  lockProbeMs?: number;
}

export type RetentionReason = "age" | "count" | "bytes";

export interface RetainedDeletion {
  sessionId: string;
  reason: RetentionReason;
  /** Bytes the session took (`sizeOf`); undefined when the backend cannot tell. */
  bytes: number | undefined;
}

export interface CheckpointTrim {
  sessionId: string;
  /** Checkpoints at or below this sequence no longer keep blobs (the retention horizon). */
  horizon: number;
  /** Checkpoints newly dropped by this run. */
  checkpointsDropped: number;
  /**
   * Rewind and undo records newly dropped by this run: their undo snapshots keep no blob, a rewind across them is
   * BEYOND_RETENTION_HORIZON and their undo NOTHING_TO_UNDO. Their lines stay in the log (the conversation).
   */
  rewindsDropped: number;
  /** The archives (events a rewind cut, kept for its undo) of rewinds behind the horizon, deleted. */
  archivesDropped: string[];
  /** Blobs freed (hashes). */
  blobsDropped: string[];
  /** Bytes freed; undefined when the backend cannot tell. On a dry run, what would be. */
  bytesFreed: number | undefined;
}

export interface RetentionReport {
  dryRun: boolean;
  /** Sessions deleted (on a dry run, that would be). */
  deleted: RetainedDeletion[];
  /** Sessions the policy would delete whose lock a live process holds: left as they are. */
  held: { sessionId: string; reason: RetentionReason }[];
  /** Sessions whose old checkpoints were dropped. */
  trimmed: CheckpointTrim[];
  /** Sessions left as they were because of an error (e.g. LOG_CORRUPT while trimming). */
  failed: (ErrorSummary & { sessionId: string; error: unknown })[];
  /** Bytes freed in all; undefined when the backend cannot tell. */
  bytesFreed: number | undefined;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Applies `policy` to the store: deletes the sessions it rules out, then drops old checkpoints from
 * those kept. A session is deleted only under its lock, taken within `lockProbeMs`: one a live
 * process holds (an agent mid-operation, a CLI rewinding) is reported in `held` and kept, and no
 * writer can be between a blob and its event. Checkpoints are dropped under the lock too: the
 * horizon is recorded (durably) first, then the blobs nothing else references are deleted.
 * Throws INVALID_ARGUMENT for a bad policy, STORE_CLOSED, or the signal's reason when aborted.
 */
export async function applyRetention(
  store: SessionStore<any>,
  policy: RetentionPolicy,
  options: RetentionOptions = {},
): Promise<RetentionReport> {
  checkPolicy(policy);
  const { signal } = options;
  const dryRun = options.dryRun ?? false;
  const now = (options.now ?? new Date()).getTime();
  const backend = store.backend;
  const report: RetentionReport = {
    dryRun,
    deleted: [],
    held: [],
    trimmed: [],
    failed: [],
    bytesFreed: backend.sizeOf ? 0 : undefined,
  };

  const wanted = options.sessionIds && new Set(options.sessionIds);
  // Newest first; a session whose log cannot be read is never judged by a time it cannot tell.
  const sessions = (await store.list(signalOf(signal))).filter(
    (info) => !info.unreadable && (!wanted || wanted.has(info.id)),
  );
  const sizes = new Map<string, number | undefined>();
  if (backend.sizeOf)
    await forEachLimited(sessions, 8, async (info) => {
      sizes.set(info.id, await backend.sizeOf!(info.id, signalOf(signal)).catch(() => undefined));
    });

  const verdicts = judge(sessions, policy, sizes, now);
  const kept: SessionInfo[] = [];
  for (const info of sessions) {
    signal?.throwIfAborted();
    const reason = verdicts.get(info.id);
    if (reason === undefined) {
      kept.push(info);
      continue;
    }
    const bytes = sizes.get(info.id);
    if (dryRun) {
      report.deleted.push({ sessionId: info.id, reason, bytes });
      if (report.bytesFreed !== undefined) report.bytesFreed += bytes ?? 0;
      continue;
    }
    try {
      const outcome = await deleteUnlessHeld(store, info.id, options.lockProbeMs ?? 0, signal);
      if (outcome === "held") report.held.push({ sessionId: info.id, reason });
      else if (outcome === "deleted") {
        report.deleted.push({ sessionId: info.id, reason, bytes });
        if (report.bytesFreed !== undefined) report.bytesFreed += bytes ?? 0;
      }
    } catch (error) {
      if (signal?.aborted) throw error;
      report.failed.push({ sessionId: info.id, ...summarizeError(error), error });
    }
  }

  if (policy.checkpointMaxAgeDays !== undefined) {
    const cutoff = now - policy.checkpointMaxAgeDays * DAY_MS;
    for (const info of kept) {
      signal?.throwIfAborted();
      try {
        const trim = await dropOldCheckpoints({ store, dryRun, signal }, info.id, cutoff);
        if (trim.checkpointsDropped + trim.rewindsDropped === 0 && trim.blobsDropped.length === 0) continue;
        report.trimmed.push(trim);
        if (report.bytesFreed !== undefined) report.bytesFreed += trim.bytesFreed ?? 0;
      } catch (error) {
        if (signal?.aborted || isAgentTapeError(error, "STORE_CLOSED")) throw error;
        if (isAgentTapeError(error, "SESSION_NOT_FOUND")) continue; // deleted meanwhile
        report.failed.push({ sessionId: info.id, ...summarizeError(error), error });
      }
    }
  }
  return report;
}

/** Why each session goes, if it does. `sessions` is newest first. */
function judge(
  sessions: readonly SessionInfo[],
  policy: RetentionPolicy,
  sizes: ReadonlyMap<string, number | undefined>,
  now: number,
): Map<string, RetentionReason> {
  const verdicts = new Map<string, RetentionReason>();
  const cutoff = policy.maxAgeDays === undefined ? undefined : now - policy.maxAgeDays * DAY_MS;
  for (const [i, info] of sessions.entries()) {
    if (cutoff !== undefined && Date.parse(info.updatedAt) < cutoff) verdicts.set(info.id, "age");
    else if (policy.keepNewest !== undefined && i >= policy.keepNewest) verdicts.set(info.id, "count");
  }
  if (policy.maxTotalBytes !== undefined && sizes.size > 0) {
    let total = 0;
    for (const info of sessions) if (!verdicts.has(info.id)) total += sizes.get(info.id) ?? 0;
    // Oldest first until the rest fit.
    for (const info of [...sessions].reverse()) {
      if (total <= policy.maxTotalBytes) break;
      if (verdicts.has(info.id)) continue;
      verdicts.set(info.id, "bytes");
      total -= sizes.get(info.id) ?? 0;
    }
  }
  return verdicts;
}

/**
 * Deletes the session under its lock, taken straight from the backend with a short wait: a lock a
 * live process holds (refreshed within `lockStaleMs`) means it is in use, and it is left alone.
 */
async function deleteUnlessHeld(
  store: SessionStore<any>,
  id: string,
  waitMs: number,
  signal: AbortSignal | undefined,
): Promise<"deleted" | "held" | "gone"> {
  let locked;
  try {
    locked = await store.backend.lock(id, { waitMs, ...signalOf(signal) });
  } catch (error) {
    if (isAgentTapeError(error, "LOCKED")) return "held";
    if (isAgentTapeError(error, "SESSION_NOT_FOUND")) return "gone";
    throw error;
  }
  try {
    return (await store.backend.deleteSession(id, signalOf(signal))) ? "deleted" : "gone";
  } finally {
    await locked.release().catch(() => undefined); // its lock folder went with the session
  }
}

/**
 * Under the session's lock (recovery runs first, so a pending rewind's blobs are referenced):
 * the horizon moves to the newest checkpoint older than `cutoff`, then what only the checkpoints
 * through it referenced is deleted.
 */
async function dropOldCheckpoints(pass: MaintenancePass, sessionId: string, cutoff: number): Promise<CheckpointTrim> {
  const { backend } = pass.store;
  const { dryRun, signal } = pass;
  return underSessionLock(pass, sessionId, async (locked) => {
    const mark = await readHorizonMark(backend, sessionId, signalOf(signal));
    const current = mark.through;
    let horizon = current;
    let throughId = mark.throughId;
    for await (const event of backend.readEvents(sessionId, signalOf(signal))) {
      if (!KEEPS_BLOBS.has(event.type) || Date.parse(event.createdAt) >= cutoff) continue;
      horizon = Math.max(horizon, event.sequence);
      if (throughId === undefined || event.id > throughId) throughId = event.id;
    }
    const dropped = await recordsBetween(backend, sessionId, current, horizon);
    const archivesDropped = await archivesBehind(backend, sessionId, horizon);
    const next = throughId === undefined ? { through: horizon } : { through: horizon, throughId };
    const blobsDropped = await findUnreferencedBlobs(backend, sessionId, {
      horizon: next,
      ignoreArchives: archivesDropped,
    });
    const found = { sessionId, archives: archivesDropped, blobs: blobsDropped };
    const bytesFreed = await freeFound(backend, locked, found, {
      dryRun,
      first: () => raiseHorizon(locked, mark, horizon, throughId),
    });
    return { sessionId, horizon, ...dropped, archivesDropped, blobsDropped, bytesFreed };
  });
}

/** The events whose snapshots keep blobs alive until retention drops them (src/blobs/retention-horizon.ts). */
const KEEPS_BLOBS = new Set(["session_checkpoint", "session_rewind"]);

/** Checkpoints, and rewind and undo records, between the horizon that was and the one about to be. */
async function recordsBetween(
  backend: StorageBackend,
  sessionId: string,
  current: number,
  horizon: number,
): Promise<{ checkpointsDropped: number; rewindsDropped: number }> {
  const counts = { checkpointsDropped: 0, rewindsDropped: 0 };
  if (horizon <= current) return counts;
  for await (const event of backend.readEvents(sessionId, { fromSequence: current + 1, toSequence: horizon })) {
    if (event.type === "session_checkpoint") counts.checkpointsDropped++;
    else if (event.type === "session_rewind") counts.rewindsDropped++;
  }
  return counts;
}

/**
 * The archives of rewinds at or behind the horizon: what they keep serves only the undo of their rewind, which
 * needs that rewind's undo snapshot, dropped with it (docs/ARCHITECTURE.md, "Retention").
 */
async function archivesBehind(backend: StorageBackend, sessionId: string, horizon: number): Promise<string[]> {
  const names: string[] = [];
  for (const name of await listArchives(backend, sessionId)) {
    const archive = await readArchive(backend, sessionId, name);
    if (archive !== undefined && archive.markerSequence <= horizon) names.push(name);
  }
  return names;
}

function checkPolicy(policy: RetentionPolicy): void {
  for (const key of ["maxAgeDays", "keepNewest", "maxTotalBytes", "checkpointMaxAgeDays"] as const) {
    const value = policy[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
      throw new InvalidArgumentError(`Retention ${key} must be a number of at least 0, not ${JSON.stringify(value)}.`);
    if (key === "keepNewest" && !Number.isSafeInteger(value))
      throw new InvalidArgumentError(`Retention keepNewest must be a whole number, not ${value}.`);
  }
}

// A store opened with `retention` applies it once, through here (the session layer cannot import this one).
registerRetentionOnOpen((store, policy) => applyRetention(store, policy));
