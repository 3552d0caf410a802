// named-fs: compared with the workspace's real path, which is in the library's form for names that are not UTF-8
// (docs/ARCHITECTURE.md, "Names and depths").
import { realpath } from "../../core/named-fs.js";
import { relative, resolve, sep } from "node:path";
import type { LockedSession, SignalOption } from "../../backend/types.js";
import { InvalidArgumentError } from "../../core/errors.js";
import type { CheckpointPayload, FileSnapshot, FileStatesPayload, StoredEvent } from "../../core/events.js";
import type { SessionStore } from "../../session/session-store.js";
import { lockedAccess } from "../../session/locked-access.js";
import { isInside, realWorkspaceOf } from "../confine.js";
import { IgnoreRules } from "./ignore-rules.js";
import { snapshotOf, stateOf, type IndexEntry, type WorkspaceIndex } from "./index-entry.js";
import { ignoredChangesBetween } from "./ignored-changes.js";
import { indexRecords, loadIndex, rememberIndex, storedGeneration, writeIndexRecords } from "./index-record.js";
import { scanWorkspace, type ScanOptions, type ScanResult, type Watching } from "./scan.js";
import { FolderWatcher } from "./folder-watcher.js";
import { signalOf } from "../../core/defined-fields.js";

export interface WorkspaceIndexOptions {
  /**
   * Gitignore-style patterns, relative to the workspace, left out of every scan on top of `.git/`
   * and the workspace's `.gitignore` files (and checked before them). Ignored paths are neither
   * captured nor touched by a rewind. @default []
   */
  ignore?: readonly string[];
  /**
   * A workspace with more tracked entries (files, folders, links) than this is refused with
   * WORKSPACE_TOO_LARGE before anything is stored: scanning a home folder by mistake must not
   * fill a disk. @default 100000
   */
  maxFiles?: number;
  /** Likewise for the bytes of the tracked files (each at most `maxFileBytes`). @default 1 GiB */
  maxBytes?: number;
  /**
   * Linux only, opt-in: watch the tracked folders (inotify, one watch per folder) so a scan lists only the
   * folders something changed in, instead of walking the whole tree: a command's cost then follows what
   * it changed. Any doubt (a burst of events that may have overflowed the kernel's queue, a `.gitignore`
   * changed, another process's scan, a watch that failed) falls back to the whole walk. What inotify does
   * not see is missed until such a walk: a file written through a hard link made from outside the workspace
   * after the file was scanned with one link (files with several are lstat'ed on every scan), writes
   * through a shared `mmap`, changes made on another machine to a network filesystem (README, "Watching").
   * @default false
   */
  watch?: boolean;
  /** Told of every scan, with what it cost and, when the whole tree was walked while watching, why. */
  onScan?: (report: ScanReport) => void;
}

/** What one scan of the workspace did (see {@link WorkspaceIndexOptions.onScan}). */
export interface ScanReport {
  sessionId: string;
  /** The scan before the command, or the one after it. */
  phase: "before" | "after";
  /** "changed folders" when a watcher named the folders to list; else "whole". */
  walked: "whole" | "changed folders";
  /** With `watch`: why the whole tree was walked (the first scan, a burst of events, ...). */
  reason?: string;
  /** Folders listed and paths lstat'ed. */
  listed: number;
  statted: number;
  /** Of those lstats, how many helper threads took ahead of the walk (a later scan of a large workspace). */
  statsAhead: number;
  /** Tracked paths the scan found created, changed or removed. */
  changed: number;
  /** Wall time of the scan, in milliseconds. */
  ms: number;
}

export interface CommandInput extends SignalOption {
  /** Name of the tool running the command, e.g. "bash". */
  tool: string;
  /** Your id for this tool call, recorded with the checkpoint. */
  callId?: string;
  /** @default the workspace recorded when the session was created */
  workspace?: string;
}

/** What {@link CommandCapture.before} hands back, for {@link CommandCapture.after} to finish. */
export interface CommandInProgress {
  readonly sessionId: string;
  readonly tool: string;
  readonly callId?: string;
  /** Real path of the workspace scanned. */
  readonly workspace: string;
}

export type CommandCheckpoint = StoredEvent<"session_checkpoint", CheckpointPayload>;

export const DEFAULT_MAX_FILES = 100_000;
export const DEFAULT_MAX_BYTES = 1024 * 1024 * 1024;

/**
 * Makes a shell command's side effects rewindable without knowing which files it touches
 * (docs/ARCHITECTURE.md, "Workspace index"). `before` brings the session's workspace index up to
 * date, so the bytes of every tracked file are in the blob store; `after` scans again and appends
 * one `session_checkpoint` naming exactly the paths that changed, each with its state before the
 * command (created paths `absent`). Unchanged files cost one lstat per scan.
 */
export class CommandCapture {
  // The index of each session's workspace as this process last saw it; checked against the
  // record's generation under the lock, so another process's scan is never missed.
  private readonly cached = new Map<string, WorkspaceIndex>();
  // With `watch`: each session's watcher, and the index its last scan left (the state its events follow).
  private readonly watchers = new Map<string, { watcher: FolderWatcher; since?: WorkspaceIndex | undefined }>();
  // The ignored entries each command's scan before it met, for its scan after to judge what it did to them.
  private readonly ignoredBefore = new WeakMap<CommandInProgress, ReadonlyMap<string, IndexEntry>>();

  constructor(
    private readonly store: SessionStore<any>,
    private readonly options: WorkspaceIndexOptions & {
      maxFileBytes: number;
      concurrency: number;
      afterState: boolean;
    },
    private readonly sessionWorkspace: (id: string, options: SignalOption) => Promise<string | undefined>,
  ) {}

  async before(id: string, input: CommandInput): Promise<CommandInProgress> {
    if (typeof input?.tool !== "string" || input.tool.trim() === "")
      throw new InvalidArgumentError("beforeCommand() needs the name of the tool running the command (`tool`).");
    input.signal?.throwIfAborted();
    const given = input.workspace ?? (await this.sessionWorkspace(id, input));
    if (given === undefined)
      throw new InvalidArgumentError(
        `Session "${id}" has no workspace: pass \`workspace\` to beforeCommand() or to store.create().`,
      );
    const workspace = await realWorkspaceOf(resolve(given));
    const handle: CommandInProgress = {
      sessionId: id,
      tool: input.tool,
      workspace,
      ...(input.callId === undefined ? {} : { callId: input.callId }),
    };
    await lockedAccess(this.store).withLockedSession(
      id,
      async (locked) => {
        const scan = await this.scan(locked, workspace, "before");
        await this.commit(locked, scan, async () => undefined);
        this.ignoredBefore.set(handle, new Map(scan.index.ignored));
      },
      { ...signalOf(input), detectReentry: false },
    );
    return handle;
  }

  /**
   * Scans after the command and records what it changed. Runs to the end whatever signal the
   * command had: a cancelled command's changes must stay rewindable. Returns undefined when the
   * command changed nothing tracked.
   */
  async after(handle: CommandInProgress): Promise<CommandCheckpoint | undefined> {
    return lockedAccess(this.store).withLockedSession(
      handle.sessionId,
      async (locked) => {
        const scan = await this.scan(locked, handle.workspace, "after");
        const ignoredBefore = this.ignoredBefore.get(handle);
        const ignoredChanges =
          ignoredBefore && scan.index.ignored ? ignoredChangesBetween(ignoredBefore, scan.index.ignored) : undefined;
        const files: FileSnapshot[] = scan.changed.sort().map((path) => {
          const entry = scan.before(path);
          return entry ? snapshotOf(path, entry) : { path, kind: "absent" };
        });
        return this.commit(locked, scan, async () => {
          // A command that only destroyed ignored content still leaves a checkpoint: the one trace of it.
          if (files.length === 0 && ignoredChanges === undefined) return undefined;
          // Index blobs were written without fsync; the log must never reference one a power loss can take.
          await locked.syncBlobs?.(files.flatMap((f) => (f.kind === "blob" ? [f.blob] : [])));
          const payload: CheckpointPayload = { tool: handle.tool, workspace: handle.workspace, files };
          if (ignoredChanges !== undefined) payload.ignoredChanges = ignoredChanges;
          if (handle.callId !== undefined) payload.callId = handle.callId;
          const events = [lockedAccess(this.store).eventFor(handle.sessionId, { type: "session_checkpoint", payload })];
          if (this.options.afterState) {
            // What the command left each path as, from the scan just made: no read, and the same append
            // (one fsync) as the checkpoint, so a rewind can tell a later hand edit (ARCHITECTURE, "Conflicts").
            const after: FileStatesPayload = {
              tool: handle.tool,
              workspace: handle.workspace,
              files: files.map((f) => stateOf(f.path, scan.index.entries.get(f.path))),
            };
            if (handle.callId !== undefined) after.callId = handle.callId;
            events.push(
              lockedAccess(this.store).eventFor(handle.sessionId, { type: "session_file_states", payload: after }),
            );
          }
          const [event] = await lockedAccess(this.store).appendUnderLock(locked, events);
          return event as CommandCheckpoint;
        });
      },
      { detectReentry: false },
    );
  }

  /** Stops every watcher (with `watch`). Scans after this walk the whole tree again, and watch anew. */
  close(): void {
    for (const { watcher } of this.watchers.values()) watcher.close();
    this.watchers.clear();
  }

  /** Brings the index up to date; also returns the index it started from (the before-state). */
  private async scan(locked: LockedSession, workspace: string, phase: ScanReport["phase"]): Promise<Scanned> {
    const startedAt = performance.now();
    const id = locked.sessionId;
    let index = this.cached.get(id);
    const stored = await storedGeneration(this.store.backend, id);
    if (index === undefined || index.generation !== stored) index = await loadIndex(this.store.backend, id);
    let whole = false;
    if (index === undefined || index.workspace !== workspace) {
      // First scan of this session, or of another workspace: every tracked file is read once.
      index = { workspace, generation: Math.max(stored, index?.generation ?? 0), entries: new Map() };
      whole = true;
    }
    const scanOptions: ScanOptions = {
      maxFiles: this.options.maxFiles ?? DEFAULT_MAX_FILES,
      maxBytes: this.options.maxBytes ?? DEFAULT_MAX_BYTES,
      maxFileBytes: this.options.maxFileBytes,
      concurrency: this.options.concurrency,
    };
    const watching = await this.watching(id, workspace, index, whole);
    // Never scanned: the store's own folder (it would snapshot itself) and the watcher's barrier folder (its
    // files come and go with every scan), when the system's temp folder lies inside the workspace.
    const ownFolders = [this.store.backend.localFolder, this.watchers.get(id)?.watcher.barrierFolder];
    const rules = new IgnoreRules(this.options.ignore ?? [], await foldersInside(workspace, ownFolders));
    let scan: ScanResult;
    try {
      scan = await scanWorkspace(locked, index, rules, scanOptions, watching);
    } catch (error) {
      // The folders the watcher named this round are spent: the next scan walks the whole tree.
      this.untrustWatcher(id, "the last scan failed");
      throw error;
    }
    this.options.onScan?.({
      sessionId: id,
      phase,
      walked: scan.walked,
      ...(watching?.reason !== undefined && scan.walked === "whole" ? { reason: watching.reason } : {}),
      listed: scan.listed,
      statted: scan.statted,
      statsAhead: scan.statsAhead,
      changed: scan.changed.length,
      ms: performance.now() - startedAt,
    });
    return { ...scan, whole };
  }

  /**
   * With `watch`: the folders changed since the index this process's last scan left, or why the
   * whole tree must be walked (docs/ARCHITECTURE.md, "Watched scans"). The events follow that index
   * only: one loaded from the record (another process scanned since) is walked whole.
   */
  private async watching(
    id: string,
    workspace: string,
    index: WorkspaceIndex,
    whole: boolean,
  ): Promise<(Watching & { reason?: string }) | undefined> {
    if (this.options.watch !== true || process.platform !== "linux") return undefined;
    let state = this.watchers.get(id);
    if (state !== undefined && (state.watcher.workspace !== workspace || state.watcher.failure !== undefined)) {
      if (state.watcher.workspace === workspace) {
        // Given up (e.g. the system's watch limit): walk, as without `watch`, and say why.
        return { changed: undefined, hooks: { beforeListing: () => false }, reason: state.watcher.failure ?? "closed" };
      }
      state.watcher.close();
      state = undefined;
    }
    if (state === undefined) {
      state = { watcher: new FolderWatcher(workspace) };
      this.watchers.set(id, state);
    }
    const { watcher } = state;
    const changes = await watcher.settle();
    const hooks = { beforeListing: (path: string, ino: bigint) => watcher.watch(path, ino) };
    if ("walk" in changes) return { changed: undefined, hooks, reason: changes.walk };
    if (whole || state.since !== index)
      return { changed: undefined, hooks, reason: "the index was not this watcher's" };
    return { changed: changes.folders, hooks };
  }

  /**
   * Runs `reference` (which may append the checkpoint), then saves the index. The checkpoint goes
   * first: a crash between the two leaves a stale index, which the next scan corrects, rather than
   * a command whose changes no checkpoint records. If anything fails, the blobs this scan wrote
   * are deleted and the cached index dropped, so the next scan starts from the record.
   */
  private async commit<T>(locked: LockedSession, scan: Scanned, reference: () => Promise<T>): Promise<T> {
    const id = locked.sessionId;
    // The index's records are made (a large one deflated on a thread) while the checkpoint is written.
    const changed = scan.whole || scan.set.length > 0 || scan.removed.length > 0;
    const records = changed ? indexRecords(scan.index, scan) : undefined;
    records?.catch(() => undefined); // awaited below, unless the checkpoint fails first
    try {
      const result = await reference();
      if (records !== undefined) await writeIndexRecords(locked, await records);
      this.cached.set(id, scan.index);
      rememberIndex(this.store.backend, id, scan.index);
      const watching = this.watchers.get(id);
      if (watching !== undefined) {
        watching.since = scan.index;
        // Folders no longer tracked (removed, now a file or a link, ignored) are no longer watched.
        watching.watcher.forget(scan.changed.filter((path) => scan.index.entries.get(path)?.kind !== "directory"));
      }
      return result;
    } catch (error) {
      scan.revert();
      this.cached.delete(id);
      this.untrustWatcher(id, "the last scan was not recorded");
      for (const hash of scan.written) await locked.deleteBlob(hash).catch(() => undefined);
      throw error;
    }
  }

  private untrustWatcher(id: string, reason: string): void {
    const watching = this.watchers.get(id);
    if (watching === undefined) return;
    watching.since = undefined;
    watching.watcher.distrust(reason);
  }
}

/** Those of `folders` that lie inside the workspace (not the workspace itself), workspace-relative. */
async function foldersInside(workspace: string, folders: readonly (string | undefined)[]): Promise<string[]> {
  const inside: string[] = [];
  for (const folder of folders) {
    if (folder === undefined) continue;
    const real = await realpath(folder).catch(() => resolve(folder));
    if (real !== workspace && isInside(workspace, real)) inside.push(relative(workspace, real).split(sep).join("/"));
  }
  return inside;
}

type Scanned = ScanResult & { whole: boolean };
