// Maintenance, gc: frees what no session needs any more (unreferenced blobs, expired rewind archives).
import type { SignalOption } from "../backend/types.js";
import { isAgentTapeError } from "../core/errors.js";
import { listArchives } from "../blobs/archives.js";
import { findUnreferencedBlobs } from "../blobs/prune.js";
import type { SessionStore } from "../session/session-store.js";
import { summarizeError, type ErrorSummary } from "./failure.js";
import { applyRetention, type RetentionPolicy, type RetentionReport } from "./retention.js";
import { type MaintenancePass, freeFound, underSessionLock } from "./free-found.js";
import { definedFields, signalOf } from "../core/defined-fields.js";

export interface GcOptions extends SignalOption {
  /** The sessions to collect. @default every session of the store */
  sessionIds?: readonly string[];
  /** Work out and report what would be freed, and delete nothing. @default false */
  dryRun?: boolean;
  /** Called as each session starts, e.g. to show progress. */
  onSession?: (sessionId: string, index: number, total: number) => void;
  /**
   * Apply this retention policy first (see `applyRetention`): delete the sessions it rules out,
   * unless a live process holds their lock, and drop old checkpoints; then collect what is left.
   * @default none: gc deletes no session and no checkpoint
   */
  retention?: RetentionPolicy;
  /** With `retention`: how long to wait for a session's lock before judging it held. @default 0 */
  lockProbeMs?: number;
}

/** What gc freed in one session (or, on a dry run, would free). */
export interface GcSessionReport {
  sessionId: string;
  /** Blobs no event references (a crash or a power loss left them): their sha256 hashes. */
  orphanBlobs: string[];
  /**
   * Rewind archives older than the newest, which only the last rewind's undo needs. The blobs
   * only they referenced are among `orphanBlobs`.
   */
  expiredArchives: string[];
  /**
   * Temp files a failed or killed replacement of the log or a record left (`.tmp-events.jsonl-…`,
   * `records/.tmp-…`), relative to the session folder; empty for a backend that leaves none.
   */
  leftoverFiles: string[];
  /**
   * Bytes freed, as the backend counts them (`sizeOf`); undefined when it cannot tell. A real
   * run measures the session before and after; a dry run adds up what would go.
   */
  bytesFreed: number | undefined;
}

/** A session gc left untouched, and why. */
export interface GcFailure extends ErrorSummary {
  sessionId: string;
  /** The error itself, e.g. to rethrow. */
  error: unknown;
}

export interface GcReport {
  dryRun: boolean;
  sessions: GcSessionReport[];
  /**
   * Sessions left as they were: a tape that cannot be read cannot say which blobs it needs
   * (LOG_CORRUPT), or another process kept the lock past the store's `lockWaitMs` (LOCKED).
   */
  failed: GcFailure[];
  /** Totals over `sessions`. `bytesFreed` is undefined when the backend cannot tell. */
  orphanBlobs: number;
  expiredArchives: number;
  /** Includes what retention freed. */
  bytesFreed: number | undefined;
  /** What the retention policy did, when one was given. */
  retention?: RetentionReport;
}

/**
 * Frees disk space: deletes the blobs no event references any more, the rewind archives older
 * than the newest (only the last rewind can be undone), and the temp files a failed or killed
 * rewrite left. Each session is collected under
 * its lock, waiting for it like any write (the store's `lockWaitMs`), so it is safe while an
 * agent runs; a session whose lock stays held, or whose tape cannot be read, is reported in
 * `failed` and not touched. Reads every event and lists every blob of each session. With
 * `retention`, applies that policy first (docs/ARCHITECTURE.md, "Retention").
 * Throws STORE_CLOSED, or the signal's reason when aborted (sessions done so far stay done).
 */
export async function gc(store: SessionStore<any>, options: GcOptions = {}): Promise<GcReport> {
  const { signal } = options;
  const dryRun = options.dryRun ?? false;
  const named = options.sessionIds !== undefined;
  const retention =
    options.retention &&
    (await applyRetention(store, options.retention, {
      dryRun,
      ...definedFields({ signal, sessionIds: options.sessionIds, lockProbeMs: options.lockProbeMs }),
    }));
  const gone = new Set(retention?.deleted.map((d) => d.sessionId));
  const ids = (named ? [...options.sessionIds!] : (await store.backend.listSessionIds(signalOf(signal))).sort()).filter(
    (id) => !gone.has(id),
  );
  const report: GcReport = {
    dryRun,
    sessions: [],
    failed: [],
    orphanBlobs: 0,
    expiredArchives: 0,
    bytesFreed: store.backend.sizeOf ? (retention?.bytesFreed ?? 0) : undefined,
  };
  if (retention) report.retention = retention;
  for (const [i, sessionId] of ids.entries()) {
    signal?.throwIfAborted();
    options.onSession?.(sessionId, i, ids.length);
    try {
      const collected = await collect({ store, dryRun, signal }, sessionId);
      report.sessions.push(collected);
      report.orphanBlobs += collected.orphanBlobs.length;
      report.expiredArchives += collected.expiredArchives.length;
      if (report.bytesFreed !== undefined) report.bytesFreed += collected.bytesFreed ?? 0;
    } catch (error) {
      if (signal?.aborted || isAgentTapeError(error, "STORE_CLOSED")) throw error;
      // Listed from the root, a stray folder is not a session; a session the caller named is worth reporting.
      const notASession = isAgentTapeError(error, "INVALID_SESSION_ID") || isAgentTapeError(error, "SESSION_NOT_FOUND");
      if (notASession && !named) continue;
      report.failed.push({ sessionId, ...summarizeError(error), error });
    }
  }
  return report;
}

/** What no event needs any more in one session, found and freed under its lock, with leftover temp files. */
async function collect(pass: MaintenancePass, sessionId: string): Promise<GcSessionReport> {
  const { backend } = pass.store;
  return underSessionLock(pass, sessionId, async (locked) => {
    const [, ...expiredArchives] = await listArchives(backend, sessionId);
    const orphanBlobs = await findUnreferencedBlobs(backend, sessionId, { ignoreArchives: expiredArchives });
    const leftoverFiles = (await locked.sweepLeftovers?.({ dryRun: pass.dryRun })) ?? [];
    const found = { sessionId, archives: expiredArchives, blobs: orphanBlobs };
    const bytesFreed = await freeFound(backend, locked, found, { dryRun: pass.dryRun });
    return { sessionId, orphanBlobs, expiredArchives, leftoverFiles, bytesFreed };
  });
}
