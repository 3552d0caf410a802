import { lstatSync } from "../core/named-fs.js";
import { join, posix, resolve } from "node:path";
import type { SignalOption } from "../backend/types.js";
import {
  InvalidArgumentError,
  PathOutsideWorkspaceError,
  SessionNotFoundError,
  WorkspaceMismatchError,
} from "../core/errors.js";
import type { CheckpointPayload, FileSnapshot, FileStatesPayload, StoredEvent } from "../core/events.js";
import type { SessionStore } from "../session/session-store.js";
import { lockedAccess } from "../session/locked-access.js";
import { snapshotPaths, type SnapshotLimits } from "./snapshot.js";
import { placeLexically, realWorkspaceOf } from "./confine.js";
import { linkTargetInside, pathBelowLinkInside, refusedToolPaths } from "./tool-paths.js";
import { isTheRecordedWorkspace, lastRecordedWorkspace } from "./recorded-workspace.js";
import { readFileStates } from "./after-state.js";
import { readVerifiedBlob, storeBlobsThenReference } from "../blobs/store-then-reference.js";
import {
  CommandCapture,
  type CommandCheckpoint,
  type CommandInProgress,
  type CommandInput,
  type WorkspaceIndexOptions,
} from "./workspace-index/command-capture.js";
import { signalOf } from "../core/defined-fields.js";

export interface CheckpointStoreOptions {
  /** Files larger than this are recorded `skipped: too_large` instead of stored. @default 5 MiB */
  maxFileBytes?: number;
  /**
   * A folder path is captured as everything below it, up to this many entries; past it the
   * folder is recorded `skipped: over_budget` (what was captured is kept). @default 10000
   */
  maxDirectoryEntries?: number;
  /** Likewise for the bytes of the files below a folder. @default 64 MiB */
  maxDirectoryBytes?: number;
  /** Files read and hashed at once in one capture. @default 8 */
  concurrency?: number;
  /** Ignore rules and limits of the workspace index behind {@link CheckpointStore.aroundCommand}. */
  workspaceIndex?: WorkspaceIndexOptions;
  /**
   * `around` records the state the tool left its paths in (see {@link CheckpointStore.after}): one hash
   * per file and one append per call. `afterCommand` records it for every path the command changed, from
   * the hashes its scan took anyway, in the checkpoint's own append. Without it a rewind cannot tell a file
   * someone else changed since from one the agent left, and overwrites it like any other. @default true
   */
  afterState?: boolean;
}

export interface CaptureInput extends SignalOption {
  /** Name of the tool about to run, e.g. "edit_file". */
  tool: string;
  /** Files or folders it may touch, relative to the workspace (or absolute inside it). */
  paths: readonly string[];
  /** @default the workspace recorded when the session was created */
  workspace?: string;
  /** Your id for this tool call, recorded with the checkpoint. */
  callId?: string;
  /**
   * What to do with a path that leads outside the workspace (`../x`, an absolute path elsewhere, a link leading
   * out, the last component included) or names no file (`""`). `"allow"` records it `skipped` (nothing of it can
   * be rewound) and goes on; `"refuse"` throws PATH_OUTSIDE_WORKSPACE, naming each path and why, before anything
   * is recorded (the tool wrapper's default, so the tool does not run). @default "allow"
   */
  outsidePaths?: "allow" | "refuse";
}

export type CheckpointEvent = StoredEvent<"session_checkpoint", CheckpointPayload>;
export type FileStatesEvent = StoredEvent<"session_file_states", FileStatesPayload>;

/**
 * Before-snapshots of the files a tool is about to touch. `capture` stores each target's current
 * bytes as a sha256-named blob and appends one `session_checkpoint` event indexing them; a later
 * `rewind` restores from them. Capture is best-effort per file and never makes the tool fail:
 * a file it cannot store is recorded `skipped` with the reason. Only misuse of the API throws.
 */
export class CheckpointStore {
  private readonly limits: SnapshotLimits;
  private readonly commands: CommandCapture;
  private readonly afterState: boolean;

  constructor(
    readonly store: SessionStore<any>,
    options: CheckpointStoreOptions = {},
  ) {
    this.limits = {
      maxFileBytes: options.maxFileBytes ?? 5 * 1024 * 1024,
      maxDirectoryEntries: options.maxDirectoryEntries ?? 10_000,
      maxDirectoryBytes: options.maxDirectoryBytes ?? 64 * 1024 * 1024,
      concurrency: options.concurrency ?? 8,
    };
    this.commands = new CommandCapture(
      store,
      {
        ...options.workspaceIndex,
        maxFileBytes: this.limits.maxFileBytes,
        concurrency: this.limits.concurrency,
        afterState: options.afterState ?? true,
      },
      (id, signal) => this.sessionWorkspace(id, signal),
    );
    this.afterState = options.afterState ?? true;
  }

  /**
   * Before a shell command (or any tool that cannot name the files it touches): brings the
   * session's workspace index up to date, storing the bytes of every tracked file not stored yet
   * (the first call reads the whole tracked tree once; later ones re-read only what changed).
   * Hand the result to {@link afterCommand} once the command is over, whatever its outcome.
   * Throws SESSION_NOT_FOUND, INVALID_ARGUMENT, LOCKED, WORKSPACE_TOO_LARGE (nothing stored).
   */
  beforeCommand(id: string, input: CommandInput): Promise<CommandInProgress> {
    return this.commands.before(id, input);
  }

  /**
   * After the command: scans the workspace again and appends one `session_checkpoint` naming
   * every tracked path the command created (`absent`), changed or deleted, with its state before
   * it, so a rewind undoes the command like an edit; then (with `afterState`) a `session_file_states`
   * event with the state the command left them in, in the same append. Returns the checkpoint, or
   * undefined when nothing changed.
   */
  afterCommand(command: CommandInProgress): Promise<CommandCheckpoint | undefined> {
    return this.commands.after(command);
  }

  /**
   * Stops the workspace watchers (`workspaceIndex.watch`); they hold no event loop open, so a program
   * need not call this to exit. A later command scan walks the whole tree and watches again.
   */
  close(): void {
    this.commands.close();
  }

  /**
   * Runs a shell command between {@link beforeCommand} and {@link afterCommand} and returns what
   * `run` returns. The after-scan is recorded whatever happens: if `run` throws, or `signal`
   * fires, `run` is awaited to its end (it gets the signal: stop the command there) so the scan
   * sees all it did, then the error (or `signal.reason`) is thrown. If the after-scan itself
   * fails, its error is thrown instead, since the command's changes were not recorded.
   */
  async aroundCommand<T>(id: string, input: CommandInput, run: (signal?: AbortSignal) => Promise<T> | T): Promise<T> {
    const command = await this.beforeCommand(id, input);
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await run(input.signal) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    await this.afterCommand(command);
    if (!outcome.ok) throw outcome.error;
    if (input.signal?.aborted) throw input.signal.reason;
    return outcome.value;
  }

  /**
   * Records what `paths` hold now. Returns the checkpoint event, or undefined when `paths` is
   * empty. Throws SESSION_NOT_FOUND, INVALID_ARGUMENT (empty tool name, no workspace), LOCKED.
   * Once the lock is taken the capture runs to the end even if `signal` fires: a half-written
   * checkpoint would be worse than a complete one.
   */
  async capture(id: string, input: CaptureInput): Promise<CheckpointEvent | undefined> {
    return this.captureNoting(id, input, new Set());
  }

  /** {@link capture}, noting in `belowLinks` the paths handed that lie below a link inside the workspace. */
  private async captureNoting(
    id: string,
    input: CaptureInput,
    belowLinks: Set<string>,
  ): Promise<CheckpointEvent | undefined> {
    if (typeof input?.tool !== "string" || input.tool.trim() === "")
      throw new InvalidArgumentError("capture() needs the name of the tool about to run (`tool`).");
    if (!Array.isArray(input.paths) || input.paths.some((p) => typeof p !== "string"))
      throw new InvalidArgumentError("capture() needs `paths`: an array of file or folder paths.");
    input.signal?.throwIfAborted();
    const givenWorkspace = input.workspace ?? (await this.sessionWorkspace(id, input));
    if (givenWorkspace === undefined)
      throw new InvalidArgumentError(
        `Session "${id}" has no workspace: pass \`workspace\` to capture() or to store.create().`,
      );
    if (input.paths.length === 0) {
      // Nothing to record, but a wrong session id is still misuse: say so now, not on the next call.
      if (input.workspace !== undefined) await this.sessionWorkspace(id, input);
      return undefined;
    }
    let realWorkspace = await this.realWorkspace(givenWorkspace);
    if (input.outsidePaths === "refuse") {
      const refused = await refusedToolPaths(realWorkspace, resolve(givenWorkspace), input.paths);
      if (refused.length > 0) throw new PathOutsideWorkspaceError(input.tool, realWorkspace, refused);
    }

    // Read, hash and store under one hold of the lock: no prune or rewind can see a blob before
    // its event exists, and what is hashed is what is stored.
    return lockedAccess(this.store).withLockedSession(
      id,
      async (locked) => {
        let snapshot = await snapshotPaths(realWorkspace, resolve(givenWorkspace), input.paths, this.limits);
        if (snapshot.files.some(mayBeStale)) {
          // Absent, or is the remembered real path gone? Only this case pays for asking again.
          const now = await this.realWorkspace(givenWorkspace, true);
          if (now !== realWorkspace) {
            realWorkspace = now;
            snapshot = await snapshotPaths(realWorkspace, resolve(givenWorkspace), input.paths, this.limits);
          }
        }
        const looks: FolderLooks = new Map();
        snapshot.files.push(...(await missingFolders(realWorkspace, snapshot.files, looks)));
        // A tool handed a link, or a path below one, writes through it: where it lands has its before-state taken too.
        const targets = [
          ...(await linkTargets(realWorkspace, resolve(givenWorkspace), snapshot.files)),
          ...(await pathsBelowLinks(
            realWorkspace,
            resolve(givenWorkspace),
            input.paths,
            snapshot.files,
            looks,
            belowLinks,
          )),
        ];
        if (targets.length > 0) {
          const more = await snapshotPaths(realWorkspace, resolve(givenWorkspace), targets, this.limits);
          more.files.push(...(await missingFolders(realWorkspace, [...snapshot.files, ...more.files], looks)));
          snapshot.files.push(...more.files);
          for (const [hash, bytes] of more.blobs) snapshot.blobs.set(hash, bytes);
        }
        const payload: CheckpointPayload = { tool: input.tool, workspace: realWorkspace, files: snapshot.files };
        if (input.callId !== undefined) payload.callId = input.callId;
        const unwritten = lockedAccess(this.store).eventFor(id, { type: "session_checkpoint", payload });
        const [event] = await storeBlobsThenReference(locked, snapshot, this.limits.concurrency, () =>
          lockedAccess(this.store).appendUnderLock(locked, [unwritten]),
        );
        return event as CheckpointEvent;
      },
      { ...signalOf(input), detectReentry: false }, // runs no user code while locked
    );
  }

  /**
   * Records what `paths` hold right after a tool ran (a `session_file_states` event: each file's
   * sha256, or absent), so a later rewind can tell a file someone else changed since from one this
   * session left as it is, and refuse to clobber it (docs/ARCHITECTURE.md, "Conflicts"). {@link around}
   * calls it for you; call it yourself after a tool you wrapped with {@link capture}. Costs one read
   * and hash per file and one append; no blob is stored. Returns undefined when `paths` is empty.
   */
  async after(id: string, input: CaptureInput): Promise<FileStatesEvent | undefined> {
    if (!Array.isArray(input?.paths) || input.paths.some((p) => typeof p !== "string"))
      throw new InvalidArgumentError("after() needs `paths`: an array of file or folder paths.");
    input.signal?.throwIfAborted();
    const givenWorkspace = input.workspace ?? (await this.sessionWorkspace(id, input));
    if (givenWorkspace === undefined)
      throw new InvalidArgumentError(`Session "${id}" has no workspace: pass \`workspace\` to after() or to create().`);
    if (input.paths.length === 0) return undefined;
    let realWorkspace = await this.realWorkspace(givenWorkspace);
    let files = await readFileStates(realWorkspace, resolve(givenWorkspace), input.paths, this.limits);
    if (files.some(mayBeStale)) {
      const now = await this.realWorkspace(givenWorkspace, true); // as in capture: gone, or moved?
      if (now !== realWorkspace) {
        realWorkspace = now;
        files = await readFileStates(realWorkspace, resolve(givenWorkspace), input.paths, this.limits);
      }
    }
    const payload: FileStatesPayload = { workspace: realWorkspace, files };
    if (typeof input.tool === "string" && input.tool !== "") payload.tool = input.tool;
    if (input.callId !== undefined) payload.callId = input.callId;
    return (await this.store.append(id, { type: "session_file_states", payload }, signalOf(input))) as FileStatesEvent;
  }

  /**
   * Wraps one tool call: captures `input.paths` (as {@link capture} does), calls `run`, then records
   * the state the tool left them in (as {@link after} does) and returns what `run` returned. The
   * checkpoint is kept whatever happens next (the tool throwing, or `signal` firing mid-run), since
   * the edit may have half-happened and the before-state is what a rewind needs; the after-state is
   * recorded when the tool throws too. Rejects with `signal.reason` when aborted; the after-state is
   * then not waited for.
   */
  async around<T>(id: string, input: CaptureInput, run: (signal?: AbortSignal) => Promise<T> | T): Promise<T> {
    const belowLinks = new Set<string>();
    const checkpoint = await this.captureNoting(id, input, belowLinks);
    const { signal } = input;
    signal?.throwIfAborted();
    const ran = Promise.resolve().then(() => run(signal));
    // Best effort: a missing after-state only means a later rewind has nothing to check these paths
    // against (as before after-states existed); it must not turn a tool that worked into a failure.
    const { signal: _signal, ...unsignalled } = input; // the tool has finished: record what it left in any case
    const paths = afterStatePaths(input.paths, checkpoint, belowLinks);
    const recordAfter = async () => {
      if (this.afterState) await this.after(id, { ...unsignalled, paths }).catch(() => undefined);
    };
    const result = ran.then(
      async (value) => {
        await recordAfter();
        return value;
      },
      async (error: unknown) => {
        await recordAfter();
        throw error;
      },
    );
    if (!signal) return result;
    return new Promise<T>((resolvePromise, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      result.then(resolvePromise, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  // A session's workspace is fixed at creation, so it is read once, not on every capture. session.json can be
  // edited by whoever can write the session folder, so the folder it names is held to the one the tape's own
  // snapshots recorded (docs/ARCHITECTURE.md, "Confinement"): else later captures would record that other folder,
  // and a rewind to a point after them would write there.
  private readonly workspaces = new Map<string, string | undefined>();
  private async sessionWorkspace(id: string, options: SignalOption): Promise<string | undefined> {
    if (!this.workspaces.has(id)) {
      const record = await this.store.backend.getSession(id, options);
      if (!record) throw new SessionNotFoundError(id);
      if (record.workspace !== undefined) {
        const recorded = await lastRecordedWorkspace(
          this.store.backend,
          id,
          () => this.store.head(id, options),
          options,
        );
        if (recorded !== undefined && !(await isTheRecordedWorkspace(record.workspace, new Set([recorded]))))
          throw new WorkspaceMismatchError(id, [recorded], record.workspace, "capture");
      }
      this.workspaces.set(id, record.workspace);
    }
    return this.workspaces.get(id);
  }

  // The real path of a workspace named to this store, resolved once rather than on every capture (a
  // realpath walks every component), when it is its own real path: no link on the way that could
  // be re-pointed to another folder. A workspace named through a link is resolved every time. A capture
  // that finds a path absent or outside asks again (`fresh`): a workspace removed, moved, or replaced by a
  // link since fails or is followed as before, and never has its files recorded absent from a stale path.
  private readonly realWorkspaces = new Set<string>();
  private async realWorkspace(workspace: string, fresh = false): Promise<string> {
    const given = resolve(workspace);
    if (!fresh && this.realWorkspaces.has(given)) return given;
    const real = await realWorkspaceOf(workspace);
    if (real !== given) {
      this.realWorkspaces.delete(given);
      return real;
    }
    if (this.realWorkspaces.size >= 64) this.realWorkspaces.clear(); // a store used with many workspaces
    this.realWorkspaces.add(given);
    return real;
  }

  /** The bytes of a blob, re-hashed: BLOB_NOT_FOUND if absent, BLOB_CORRUPT if they no longer match. */
  async readBlob(id: string, hash: string, options: SignalOption = {}): Promise<Buffer> {
    return readVerifiedBlob(this.store.backend, id, hash, options);
  }
}

/**
 * The paths a tool's after-state names: those it was handed, and the topmost of the paths its capture added (the
 * missing folder above a path, where a link handed to it leads, where a path below a link lands). The tool changes
 * those too; with no after-state there, a path below them keeps the state the tape had before the tool (a file
 * it wrote in the folder a link leads to, recorded absent by an earlier command), and a rewind takes what the
 * tool did for a change made by someone else (docs/ARCHITECTURE.md, "Conflicts").
 */
function afterStatePaths(
  handed: readonly string[],
  checkpoint: CheckpointEvent | undefined,
  belowLinks: ReadonlySet<string>,
): string[] {
  if (checkpoint === undefined) return [...handed];
  const recorded = new Set(checkpoint.payload.files.map((file) => file.path));
  const named = new Set(handed.map((path) => posix.normalize(path).replace(/\/+$/, "")));
  const added = [...recorded].filter((path) => {
    if (named.has(path)) return false;
    for (let slash = path.lastIndexOf("/"); slash > 0; slash = path.lastIndexOf("/", slash - 1))
      if (recorded.has(path.slice(0, slash)) || named.has(path.slice(0, slash))) return false;
    return true;
  });
  // A path handed below a link is a second name of the place it lands, which is named here by its own: a change to
  // that place by its own name (a command's) would leave the second name's state stale on the tape, and a rewind
  // take it for a change made by someone else. It is left unknown (not checked); its landing place is checked. So
  // is a missing folder above it, recorded by the name handed (`l/sub` for `l/sub/g.txt`, `l` a link).
  const second = (path: string) =>
    belowLinks.has(path) || [...belowLinks].some((below) => below.startsWith(`${path}/`));
  return [...handed.filter((path) => !second(path)), ...added.filter((path) => !second(path))];
}

/** A record that a remembered real path gone stale would also give: worth resolving the workspace again. */
function mayBeStale(record: { kind: string; reason?: string }): boolean {
  if (record.kind === "absent") return true;
  return (record.kind === "skipped" || record.kind === "unknown") && record.reason === "outside_workspace";
}

/**
 * The highest missing folder above each absent path, recorded absent too: a tool that writes `new/a.txt` makes
 * `new` on the way (`mkdir -p`), and a rewind must take it away with the file, not leave an empty folder the
 * workspace never had. Only looked at (lstat), never written; the absent paths were placed inside already.
 */
async function missingFolders(
  realWorkspace: string,
  files: readonly FileSnapshot[],
  looks: FolderLooks = new Map(),
): Promise<FileSnapshot[]> {
  const named = new Set(files.map((file) => file.path));
  const found: FileSnapshot[] = [];
  for (const file of files) {
    if (file.kind !== "absent" || !file.path.includes("/")) continue;
    const parts = file.path.split("/").slice(0, -1);
    for (let depth = 1; depth <= parts.length; depth++) {
      const folder = parts.slice(0, depth).join("/");
      const look = lookAt(realWorkspace, folder, looks);
      // Below a link a name is a second name of where it leads, whose missing folder is recorded by its own name
      // (pathsBelowLinks): by this one, a rewind wanting it absent would delete through the link.
      if (look === "link") break;
      if (look !== "missing") continue;
      if (!named.has(folder)) {
        named.add(folder);
        found.push({ path: folder, kind: "absent" });
      }
      break;
    }
  }
  return found;
}

/**
 * What lstat says of a folder above a named path, looked at once per capture (missingFolders, pathsBelowLinks),
 * synchronously: a few microseconds each, where a hop through the thread pool costs more than the call.
 */
type FolderLooks = Map<string, "missing" | "link" | "there">;

function lookAt(realWorkspace: string, folder: string, looks: FolderLooks): "missing" | "link" | "there" {
  let look = looks.get(folder);
  if (look === undefined) {
    try {
      look = lstatSync(join(realWorkspace, folder)).isSymbolicLink() ? "link" : "there";
    } catch (error) {
      look = (error as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "there";
    }
    looks.set(folder, look);
  }
  return look;
}

/**
 * Where the paths a tool named land below a link inside the workspace, when no record names it yet. The folders
 * above each path are looked at first (most were already, for missingFolders): only a link among them costs more.
 */
async function pathsBelowLinks(
  realWorkspace: string,
  givenWorkspace: string,
  paths: readonly string[],
  files: readonly FileSnapshot[],
  looks: FolderLooks,
  handedBelowLinks: Set<string>,
): Promise<string[]> {
  const named = new Set(files.map((file) => file.path));
  const landed: string[] = [];
  for (const path of paths) {
    const place = placeLexically(realWorkspace, path, givenWorkspace);
    if (!place.inside) continue;
    const parts = place.path.split("/").slice(0, -1);
    let linked = false;
    for (let depth = 1; depth <= parts.length && !linked; depth++)
      linked = lookAt(realWorkspace, parts.slice(0, depth).join("/"), looks) === "link";
    if (!linked) continue;
    const inside = await pathBelowLinkInside(realWorkspace, givenWorkspace, path);
    if (inside !== undefined) handedBelowLinks.add(path);
    if (inside !== undefined && !named.has(inside)) {
      named.add(inside);
      landed.push(inside);
    }
  }
  return landed;
}

/** The targets inside the workspace of the links among `files` that no record names yet (`linkTargetInside`). */
async function linkTargets(
  realWorkspace: string,
  givenWorkspace: string,
  files: readonly FileSnapshot[],
): Promise<string[]> {
  const named = new Set(files.map((file) => file.path));
  const targets: string[] = [];
  for (const file of files) {
    if (file.kind !== "symlink") continue;
    const target = await linkTargetInside(realWorkspace, givenWorkspace, file.path);
    if (target !== undefined && !named.has(target)) {
      named.add(target);
      targets.push(target);
    }
  }
  return targets;
}
