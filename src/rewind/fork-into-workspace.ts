import { lstatSync, mkdir, readdir, readdirTypedSync } from "../core/named-fs.js";
import { join, resolve } from "node:path";
import type { SignalOption, StorageBackend } from "../backend/types.js";
import {
  BeyondRetentionHorizonError,
  ForkFailedError,
  InvalidArgumentError,
  isAgentTapeError,
  SessionExistsError,
  SessionNotFoundError,
  WorkspaceNotEmptyError,
} from "../core/errors.js";
import type { FileStatesPayload, StoredEvent } from "../core/events.js";
import { assertSessionId, newId } from "../core/ids.js";
import { assertPayloadActedOn } from "../core/payload-check.js";
import { snapshotsIn } from "../blobs/references.js";
import { isDroppedCheckpoint, readHorizonMark } from "../blobs/retention-horizon.js";
import type { SessionInfo, SessionStore } from "../session/session-store.js";
import { lockedAccess } from "../session/locked-access.js";
import { checkForkPointForm, resolveForkPoint } from "../session/sequence-on-tape.js";
import { isInside, realWorkspaceOf } from "../checkpoint/confine.js";
import { removeEntry } from "../checkpoint/remove-entry.js";
import { loadIndex } from "../checkpoint/workspace-index/index-record.js";
import { applyFileRecords } from "./apply-files.js";
import { copyEntries, makeDurable, setFolderModes, type CopiedEntries } from "./copy-entries.js";
import { closestSnapshotPerPath, planFileChanges, type WantedState } from "./plan.js";
import { recordedWorkspace } from "./recorded-workspace.js";
import { workspaceRecordedBy } from "../checkpoint/recorded-workspace.js";
import { UNDO_LIMITS } from "./rewind.js";
import { signalOf } from "../core/defined-fields.js";

export interface ForkIntoWorkspaceOptions extends SignalOption {
  /**
   * The fork's own folder: a new one (made, with any missing parents) or an empty one. Anything else is
   * WORKSPACE_NOT_EMPTY and nothing is written. It must not lie inside the parent's workspace, nor hold it.
   */
  workspace: string;
  /**
   * Last event of the parent to keep; the folder gets the files as they were there.
   * @default the parent's last sequence
   */
  atSequence?: number;
  /** Or: the files and events as they were just before this tool call (see `ForkOptions.beforeCallId`). */
  beforeCallId?: string;
  /** @default a generated, time-sortable id */
  id?: string;
  /** @default the parent's title */
  title?: string;
}

export interface ForkIntoWorkspaceReport {
  /** The new session: its workspace is the new folder. */
  session: SessionInfo;
  /** The new folder's real path. */
  workspace: string;
  /** What the new folder holds: regular files, symlinks, folders (not counting itself), and the files' bytes. */
  files: number;
  symlinks: number;
  folders: number;
  bytes: number;
  /**
   * Tracked paths not made as they were at the fork point, each with why: a snapshot that was not captured
   * (too large, unreadable) or whose blob is gone (then the parent's current entry is copied, as a rewind
   * of the parent would leave it), an entry of the parent that could not be read or is not a file, folder
   * or link, a path leading outside.
   */
  skipped: { path: string; reason: string }[];
}

/**
 * Forks a session into its own folder (docs/ARCHITECTURE.md, "Forks"): like `store.fork`, plus the new
 * folder filled with the tracked files as they were at `atSequence` — bytes, modes, symlinks, folders — so
 * two lines of work go on side by side without touching each other's files. The fork records the new
 * folder as its workspace, in session.json and on its tape, so its rewinds and undos act there only (also
 * a rewind to before the fork point), and the parent's act in the parent's folder only.
 *
 * Tracked paths: with a workspace index (the parent ran `aroundCommand`), every path the index holds plus
 * every path the tape names; without one, every path the tape names. Each is made as it was at the fork
 * point, by the rewind rule: the closest before-snapshot after the point, else the parent's entry now.
 * What is left out (ignored by the index's rules, never captured) is not copied.
 *
 * The folder is filled first, made durable, and only then is the session created, in one step: a failure
 * removes what was written and leaves no session, and a crash leaves at worst a partly filled folder that
 * no session claims (a second try then says WORKSPACE_NOT_EMPTY). The parent's lock is held throughout, so
 * no rewind of the parent changes its files' history meanwhile.
 * Throws SESSION_NOT_FOUND, SESSION_EXISTS, WORKSPACE_NOT_EMPTY, SEQUENCE_OUT_OF_RANGE, SEQUENCE_NOT_ON_TAPE,
 * WORKSPACE_MISMATCH (the parent's tape recorded another folder than its session.json),
 * BEYOND_RETENTION_HORIZON, INVALID_ARGUMENT.
 */
export async function forkIntoWorkspace(
  store: SessionStore<any>,
  parentId: string,
  options: ForkIntoWorkspaceOptions,
): Promise<ForkIntoWorkspaceReport> {
  if (typeof options?.workspace !== "string" || options.workspace === "")
    throw new InvalidArgumentError(`forkIntoWorkspace needs the new folder's path (\`workspace\`).`);
  assertSessionId(parentId);
  const id = options.id ?? newId();
  assertSessionId(id);
  checkForkPointForm(options);
  const signal = signalOf(options);
  const parent = await store.backend.getSession(parentId, signal);
  if (!parent) throw new SessionNotFoundError(parentId);
  if (parent.workspace === undefined)
    throw new InvalidArgumentError(`Session "${parentId}" has no workspace to fork files from: use store.fork().`);
  if (await store.backend.getSession(id, signal)) throw new SessionExistsError(id);

  const folder = await claimEmptyFolder(options.workspace);
  let finished = false;
  try {
    const report = await lockedAccess(store).withLockedSession(
      parentId,
      async (locked) => {
        const at = await resolveForkPoint(store.backend, parentId, options, locked.lastSequence, signal);
        const tape = await readTape(store.backend, parentId, at, signal);
        const horizon = await readHorizonMark(store.backend, parentId, signal);
        if (tape.after.some((event) => isDroppedCheckpoint(event, horizon)))
          throw new BeyondRetentionHorizonError(parentId, at, horizon.through);
        // The folder to copy from is the one the tape recorded, not merely what session.json says.
        const from = await realWorkspaceOf(await recordedWorkspace(parentId, tape.recordedIn, parent.workspace!));
        if (isInside(from, folder.real) || isInside(folder.real, from))
          throw new InvalidArgumentError(
            `Cannot fork into "${folder.real}": it overlaps the parent's workspace "${from}" ` +
              `(the two lines of work would touch each other's files). Name a folder outside it.`,
          );

        let copied: CopiedEntries;
        try {
          copied = await materialise(store.backend, parentId, from, folder, tape);
        } catch (error) {
          throw isAgentTapeError(error) ? error : new ForkFailedError(parentId, folder.real, error);
        }
        const session = await lockedAccess(store).forkUnderLock(
          locked,
          {
            atSequence: at,
            id,
            ...(options.title !== undefined && { title: options.title }),
            ...signal,
          },
          { from, to: folder.real },
        );
        return { session, workspace: folder.real, ...countTree(folder.real), skipped: copied.skipped };
      },
      { ...signal, detectReentry: false }, // runs no user code while locked
    );
    finished = true;
    return report;
  } finally {
    if (!finished) await folder.release();
  }
}

/** What the fork needs from the parent's tape, read in one pass without keeping every event. */
interface TapeFacts {
  /** The events after the fork point, in order: their snapshots say what each path was there. */
  after: StoredEvent[];
  /** Every path the tape names (checkpoints, undo snapshots, after-states). */
  named: Set<string>;
  /** One event per workspace the tape recorded files in, for the check that it is the parent's. */
  recordedIn: StoredEvent[];
}

async function readTape(
  backend: StorageBackend,
  sessionId: string,
  at: number,
  signal: SignalOption,
): Promise<TapeFacts> {
  const facts: TapeFacts = { after: [], named: new Set(), recordedIn: [] };
  const workspaces = new Set<string>();
  for await (const event of backend.readEvents(sessionId, signal)) {
    assertPayloadActedOn(event); // a malformed checkpoint is refused here, before anything is written
    for (const file of snapshotsIn(event)) facts.named.add(file.path);
    if (event.type === "session_file_states")
      for (const state of (event.payload as FileStatesPayload).files) facts.named.add(state.path);
    const workspace = workspaceRecordedBy(event);
    if (workspace !== undefined && !workspaces.has(workspace)) {
      workspaces.add(workspace);
      facts.recordedIn.push(event);
    }
    if (event.sequence > at) facts.after.push(event);
  }
  return facts;
}

/**
 * Fills the new folder with the tracked tree at the fork point, reusing the rewind's rule and code: the
 * parent's current entries are copied (all but those the tape says were different at the point), then the
 * rewind plan is made against the new folder and applied there, which restores what changed after the point,
 * deletes what was made after it (also below a complete folder listing) and reports what it cannot give.
 */
async function materialise(
  backend: StorageBackend,
  parentId: string,
  from: string,
  folder: ClaimedFolder,
  tape: TapeFacts,
): Promise<CopiedEntries> {
  const wanted = await closestSnapshotPerPath(tape.after);
  const tracked = new Set(tape.named);
  const index = await loadIndex(backend, parentId);
  if (index?.workspace === from) for (const path of index.entries.keys()) tracked.add(path);

  const copyOptions = { concurrency: UNDO_LIMITS.concurrency, beforeMaking: folder.note };
  const copied = await copyEntries(
    from,
    folder.real,
    [...tracked].filter((path) => !settledByTape(path, wanted)),
    copyOptions,
  );
  const plan = await planFileChanges(backend, parentId, folder.real, folder.real, wanted, UNDO_LIMITS);
  const records = plan.changes.flatMap((change) => (change.becomes ? [change.becomes] : []));
  for (const record of records) folder.note(record.path.split("/")[0]!);
  const applied = await applyFileRecords(folder.real, records, async (hash) => plan.blobs.get(hash)!);
  for (const record of records) {
    if (applied.refused.includes(record.path)) continue;
    if (record.kind === "absent") {
      for (const path of copied.made.keys()) if (isAtOrBelow(path, record.path)) copied.made.delete(path);
    } else if (record.kind === "blob") copied.made.set(record.path, "file");
    else if (record.kind === "symlink" || record.kind === "directory") copied.made.set(record.path, record.kind);
  }
  // What the tape cannot give as it was at the point is left as the parent has it now, as a rewind leaves it.
  const unknown = plan.changes.filter((c) => c.action === "skip" && c.reason !== "outside_workspace");
  const missingBlob = unknown.filter((c) => c.reason === "blob_missing" || c.reason === "blob_corrupt");
  if (missingBlob.length > 0)
    await copyEntries(
      from,
      folder.real,
      missingBlob.map((c) => c.path),
      { ...copyOptions, into: copied },
    );
  for (const change of plan.changes)
    if (change.action === "skip") copied.skipped.push({ path: change.path, reason: change.reason ?? "skipped" });
  for (const path of applied.refused) copied.skipped.push({ path, reason: "outside_workspace" });

  const restoredFolders = new Set(records.filter((r) => r.kind === "directory").map((r) => r.path));
  await setFolderModes(
    folder.real,
    new Map([...copied.folderModes].filter(([path]) => copied.made.has(path) && !restoredFolders.has(path))),
  );
  await makeDurable(folder.real, copied.made);
  return copied;
}

/**
 * True when the tape says what `path` was at the fork point without looking at the parent's folder: it was
 * a file or link there (restored from its snapshot), or it, or a folder above it, was absent, a file or a
 * link (so nothing was there). Copying such a path would only be overwritten or deleted by the plan.
 */
function settledByTape(path: string, wanted: ReadonlyMap<string, WantedState>): boolean {
  const own = wanted.get(path)?.kind;
  if (own === "absent" || own === "blob" || own === "symlink") return true;
  for (let slash = path.lastIndexOf("/"); slash > 0; slash = path.lastIndexOf("/", slash - 1)) {
    const above = wanted.get(path.slice(0, slash))?.kind;
    if (above === "absent" || above === "blob" || above === "symlink") return true;
  }
  return false;
}

function isAtOrBelow(path: string, root: string): boolean {
  return path === root || path.startsWith(`${root}/`);
}

/** The new folder, claimed empty: `release` removes what the fork made in it, and the folder if the fork made it. */
interface ClaimedFolder {
  real: string;
  /** Called with each top-level name before anything is made under it. */
  note: (topName: string) => void;
  release: () => Promise<void>;
}

async function claimEmptyFolder(workspace: string): Promise<ClaimedFolder> {
  const given = resolve(workspace);
  let made: string | undefined;
  try {
    made = await mkdir(given, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST" || code === "ENOTDIR")
      throw new InvalidArgumentError(`Cannot fork into "${given}": it is not a folder.`, { cause: error });
    throw new InvalidArgumentError(`Cannot fork into "${given}": it cannot be made (${code}).`, { cause: error });
  }
  const real = await realWorkspaceOf(given);
  const found = await readdir(real);
  if (found.length > 0) throw new WorkspaceNotEmptyError(given, found.sort());
  const names = new Set<string>();
  return {
    real,
    note: (name) => names.add(name),
    release: async () => {
      // Only what this fork made: the folder itself when it made it, else the entries it put there.
      if (made !== undefined) await removeEntry(made).catch(() => undefined);
      else for (const name of names) await removeEntry(join(real, name)).catch(() => undefined);
    },
  };
}

/** Counts what the new folder holds, without following links (synchronous calls: a new, small-file-heavy tree). */
function countTree(root: string): { files: number; symlinks: number; folders: number; bytes: number } {
  const counts = { files: 0, symlinks: 0, folders: 0, bytes: 0 };
  const queue = [root];
  while (queue.length > 0) {
    const dir = queue.pop()!;
    // named-fs: names as bytes, and a path past PATH_MAX reached (docs/ARCHITECTURE.md, "Names and depths")
    for (const { name, entry } of readdirTypedSync(dir)) {
      const path = `${dir}/${name}`;
      if (entry.isDirectory()) {
        counts.folders++;
        queue.push(path);
      } else if (entry.isSymbolicLink()) counts.symlinks++;
      else if (entry.isFile()) {
        counts.files++;
        counts.bytes += lstatSync(path).size;
      }
    }
  }
  return counts;
}
