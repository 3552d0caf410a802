import { createHash, randomUUID } from "node:crypto";
import { fsyncDir } from "../core/atomic-file.js";
import { SYNC_FILESYSTEM_FROM, syncFilesystem } from "../core/sync-filesystem.js";
import type { FileSnapshot } from "../core/events.js";
import { isAgentTapeError } from "../core/errors.js";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { confine, placeLexically, type ParentLooks } from "../checkpoint/confine.js";
import { HeldWorkspace, OUTSIDE } from "../checkpoint/held-workspace.js";
import { removeEntry } from "../checkpoint/remove-entry.js";
import { isStrictlyBelowAny } from "./plan.js";
import { lateChange, stillAsPlannedSliced, stillAsPlannedSync, type LateChange } from "./still-as-planned.js";
import { deleteNow, restoreFileNow, type NowOutcome } from "./restore-now.js";
import { fsyncFile, ignoreGone, restoreDirectory, restoreFile, restoreMode, restoreSymlink } from "./restore-async.js";
import { yieldIfLong } from "../core/time-slices.js";
import type { FileStamp } from "../checkpoint/file-stamps.js";

export interface ApplyOptions {
  concurrency?: number;
  /**
   * Names the operation (session, rewind, step) so that its temp names are the same each time it runs: a run
   * that recovery repeats after a crash then clears what the crashed run left, and nothing else. Without it,
   * the temp names are random.
   */
  operation?: string;
  /**
   * What each path was when the plan looked, and what the records make it: a path found as neither right before
   * it is replaced or deleted is left as it is and listed in `changed` (docs/ARCHITECTURE.md, "Conflicts").
   */
  planned?: ReadonlyMap<string, readonly FileSnapshot[]>;
  /** What a stat said of the files the plan read and hashed (file-stamps.ts): not read again at that look. */
  stamps?: ReadonlyMap<string, FileStamp>;
  /**
   * Told of each path found changed at that last look (see `planned`), before anything is written there: it
   * throws to refuse the whole operation, returns "left" to leave the path as it is (listed in `changed`), or
   * returns the planned states again once it has kept what is there for the undo: the path is then looked at
   * again and written (docs/ARCHITECTURE.md, "Conflicts"). Without it, every such path is left.
   */
  onChanged?: (change: LateChange) => Promise<"left" | ReadonlyMap<string, readonly FileSnapshot[]>>;
}

export interface ApplyResult {
  /** Paths that turned out to lead outside the workspace at the last moment, and were left alone. */
  refused: string[];
  /** Paths found changed just before they were to be replaced or deleted (see `planned`), and left as they are. */
  changed: string[];
}

/**
 * Makes each path what its record says: a file with the blob's bytes and mode, a symlink, a
 * folder, or nothing. Restores run parents first, deletions deepest first, so a folder that must
 * go takes with it whatever a restore put inside it. Files are written temp + rename, so a crash
 * leaves each file old or new, never torn; every step is idempotent (recovery re-runs it). All is
 * durable when it returns, made so once at the end rather than file by file: a few files are fsynced
 * together with their folders (each once, all at the same time); from SYNC_FILESYSTEM_FROM files on, one
 * syncfs of the workspace's filesystem replaces those fsyncs (docs/ARCHITECTURE.md, "Rewind intent":
 * until the log is cut, recovery re-runs this step, so a power loss before then loses nothing).
 * Each path is reached through its folder held open and checked inside the workspace right when
 * it is touched (docs/ARCHITECTURE.md, "Confinement"), so a symlink swapped in after the plan, or
 * while the write happens, still cannot lead a write or a delete outside.
 */
export async function applyFileRecords(
  realWorkspace: string,
  records: readonly FileSnapshot[],
  blobBytes: (hash: string) => Promise<Buffer>,
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  const held = await HeldWorkspace.open(realWorkspace);
  try {
    const temps = new TempNames(records, options.operation);
    await yieldIfLong(); // a pass over the records (as is inOrder's): one turn between them (time-slices.ts)
    return await applyHeld(held, records, blobBytes, options.concurrency ?? 8, temps, options);
  } finally {
    await held.close();
  }
}

async function applyHeld(
  held: HeldWorkspace,
  records: readonly FileSnapshot[],
  blobBytes: (hash: string) => Promise<Buffer>,
  concurrency: number,
  temps: TempNames,
  options: ApplyOptions,
): Promise<ApplyResult> {
  const run = new ApplyRun(held, blobBytes, concurrency, temps, options);
  const { folders, files, deletes } = inOrder(records);
  await yieldIfLong();
  await run.restoreFolders(folders);
  await run.restoreFiles(files);
  await run.deletePaths(deletes);
  await run.makeDurable(files.length >= SYNC_FILESYSTEM_FROM);
  return { refused: run.refused, changed: run.changed };
}

/**
 * The records in the order they are done: folders parents first, then files and links, then deletions deepest
 * first. Below a path made a file or a link, or removed, nothing is left of its own: acting there would act
 * through the link just made (deleting what it leads to), so such records are done by their parent's.
 */
function inOrder(records: readonly FileSnapshot[]) {
  const depth = (p: string) => (p === "." ? 0 : p.split("/").length);
  const nonFolders = new Set(
    records.filter((r) => r.kind === "blob" || r.kind === "symlink" || r.kind === "absent").map((r) => r.path),
  );
  const own = (r: FileSnapshot) => !isStrictlyBelowAny(r.path, nonFolders);
  const restores = records
    .filter((r) => r.kind !== "absent" && r.kind !== "skipped" && own(r))
    .sort((a, b) => depth(a.path) - depth(b.path));
  return {
    folders: restores.filter((r) => r.kind === "directory"),
    files: restores.filter((r) => r.kind !== "directory"),
    deletes: records.filter((r) => r.kind === "absent" && own(r)).sort((a, b) => depth(b.path) - depth(a.path)),
  };
}

const parentOf = (path: string) => (path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "");

/**
 * One apply's steps and what they gather: the paths refused (leading outside) or found changed, the folders
 * touched and the files written (made durable at the end). Where folders are held, files are written and paths
 * deleted with synchronous calls, many per turn of the event loop (restore-now.ts); what that form leaves
 * ("async") is done the asynchronous way, which handles every case and names every error.
 */
class ApplyRun {
  readonly refused: string[] = [];
  readonly changed: string[] = [];
  private planned: ReadonlyMap<string, readonly FileSnapshot[]> | undefined;
  private readonly touchedDirs = new Set<string>();
  private readonly written: string[] = [];
  private readonly looks: ParentLooks = new Map();
  private readonly holding = HeldWorkspace.holdsFolders;

  constructor(
    private readonly held: HeldWorkspace,
    private readonly blobBytes: (hash: string) => Promise<Buffer>,
    private readonly concurrency: number,
    private readonly temps: TempNames,
    private readonly options: ApplyOptions,
  ) {
    this.planned = options.planned;
  }

  /** Folders one depth at a time (a parent before its children). */
  async restoreFolders(folders: readonly FileSnapshot[]): Promise<void> {
    for (const record of folders) {
      if (record.kind !== "directory") continue;
      const path = await this.place(record.path);
      if (path === undefined) continue;
      if (path === ".") await this.held.at(".", (where) => restoreMode(where, record.mode, record));
      else
        await this.act(path, async (where) => {
          if (await this.unchanged(path, where, false))
            await restoreDirectory(this.held, path, where, record.mode, record);
        });
    }
  }

  /** Files and links in parallel, files the synchronous way where it can. */
  async restoreFiles(files: readonly FileSnapshot[]): Promise<void> {
    await forEachLimited(files, this.concurrency, async (record) => {
      if (!this.holding || record.kind !== "blob") return this.restoreOne(record);
      const place = placeLexically(this.held.realWorkspace, record.path, this.held.realWorkspace);
      if (!place.inside || place.path === ".") return this.restoreOne(record); // refused there
      if (!(await this.restoreFileAtOnce(place.path, record))) return this.restoreOne(record);
    });
  }

  /** Deepest first, never the workspace itself. */
  async deletePaths(deletes: readonly FileSnapshot[]): Promise<void> {
    for (const record of deletes) {
      const path = await this.place(record.path);
      if (path === undefined || path === ".") continue;
      this.held.forget(path);
      if (this.holding) {
        await yieldIfLong();
        const unchanged = (where: string) => this.unchangedNow(path, where, true);
        if (this.now(path, (where) => deleteNow(where, () => unchanged(where)))) continue;
      }
      await this.deleteOne(path);
    }
  }

  /**
   * Makes the files, renames and unlinks durable before the log says the rewind happened: no file waited for the
   * disk on its own, so the waits overlap here (files and folders at once: until this returns nothing relies on
   * their order, recovery re-runs the whole step). Many files: one syncfs instead of an fsync each.
   */
  async makeDurable(batched: boolean): Promise<void> {
    if (batched && (await syncFilesystem(this.held.realWorkspace))) return;
    const { held } = this;
    await Promise.all([
      forEachLimited(this.written, this.concurrency, (path) =>
        held.at(path, fsyncFile).then(() => undefined, ignoreGone),
      ),
      ...[...this.touchedDirs].map((dir) => held.folder(dir, fsyncDir).catch(() => undefined)),
    ]);
  }

  /** A file's restore the synchronous way; false when that form left it (done the asynchronous way then). */
  private async restoreFileAtOnce(path: string, record: FileSnapshot & { kind: "blob" }): Promise<boolean> {
    const bytes = await this.blobBytes(record.blob);
    let done;
    try {
      done = await restoreFileNow(
        this.held,
        path,
        (where) => this.temps.of(record, where),
        bytes,
        record.mode,
        (where) => this.unchangedNow(path, where, true),
        record,
      );
    } catch {
      return false; // the asynchronous form does it again, and says what went wrong
    }
    if (done === "async") return false;
    if (done === OUTSIDE) this.refused.push(path);
    else {
      this.touchedDirs.add(parentOf(path));
      this.written.push(path);
    }
    return true;
  }

  /** A file or a link, the asynchronous way. */
  private async restoreOne(record: FileSnapshot): Promise<void> {
    const path = await this.place(record.path);
    if (path === undefined || path === ".") return; // the workspace itself stays a folder
    const unchanged = (where: string) => () => this.unchanged(path, where, true);
    if (record.kind === "blob") {
      const bytes = await this.blobBytes(record.blob);
      await this.act(path, (where) =>
        restoreFile(this.held, path, where, this.temps.of(record, where), bytes, record, unchanged(where)),
      );
      this.written.push(path);
    } else if (record.kind === "symlink") {
      await this.act(path, (where) =>
        restoreSymlink(this.held, path, where, this.temps.of(record, where), record, unchanged(where)),
      );
    }
  }

  /** A deletion the asynchronous way: removes a link itself, never what it points at. */
  private async deleteOne(path: string): Promise<void> {
    let done;
    try {
      done = await this.held.at(path, async (where) => {
        if (await this.unchanged(path, where, true)) await removeEntry(where);
      });
    } catch (error) {
      if (await this.leadsOutside(path)) return;
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return; // no folder to hold it: nothing to delete
      throw naming(path, error);
    }
    if (done === OUTSIDE) this.refused.push(path);
    else this.touchedDirs.add(parentOf(path));
  }

  /**
   * Each path is looked at again right before it is replaced or deleted, in the folder the write uses: an edit
   * saved since the conflict check is never overwritten unseen (docs/ARCHITECTURE.md, "Conflicts"). What is
   * kept for the undo is looked at again (a few times: a path that keeps changing is left).
   */
  private async unchanged(path: string, where: string, deep: boolean): Promise<boolean> {
    if (this.planned !== undefined && deep && (await this.unchangedBelow(path, where))) return true;
    for (let look = 1; this.planned !== undefined; look++) {
      const change = await lateChange(where, path, this.planned, deep);
      if (change === undefined) return true;
      const outcome = look <= 3 && this.options.onChanged ? await this.options.onChanged(change) : "left";
      if (outcome === "left") {
        this.changed.push(path);
        return false;
      }
      this.planned = outcome;
    }
    return true;
  }

  /** The quick look first, with synchronous calls: false (or an error) leaves it to the look that says what changed. */
  private async unchangedBelow(path: string, where: string): Promise<boolean> {
    try {
      return await stillAsPlannedSliced(where, path, this.planned!, this.options.stamps);
    } catch {
      return false;
    }
  }

  private unchangedNow(path: string, where: string, deep: boolean): boolean {
    return this.planned === undefined || stillAsPlannedSync(where, path, this.planned, deep, this.options.stamps);
  }

  /**
   * A record's path as the workspace-relative name to act on; undefined (and refused) when it leads outside.
   * With folders held, the folder opened is checked at the moment of use anyway (docs/ARCHITECTURE.md,
   * "Confinement"): the parents need a look only when reaching it fails, to tell "outside" from an OS error.
   */
  private async place(path: string): Promise<string | undefined> {
    const { realWorkspace } = this.held;
    const where = this.holding
      ? placeLexically(realWorkspace, path, realWorkspace)
      : await confine(realWorkspace, path, realWorkspace, this.looks);
    if (!where.inside) {
      this.refused.push(path);
      return undefined;
    }
    return where.path;
  }

  /** True (and refused) when reaching `path` failed because a parent leads outside, e.g. a dangling link. */
  private async leadsOutside(path: string): Promise<boolean> {
    const { realWorkspace } = this.held;
    if (!this.holding || (await confine(realWorkspace, path, realWorkspace, this.looks)).inside) return false;
    this.refused.push(path);
    return true;
  }

  private async act(path: string, action: (where: string) => Promise<void>): Promise<void> {
    let done;
    try {
      done = await this.held.at(path, action, { create: true });
    } catch (error) {
      if (await this.leadsOutside(path)) return;
      throw naming(path, error);
    }
    if (done === OUTSIDE) this.refused.push(path);
    else this.touchedDirs.add(parentOf(path));
  }

  /** `act` run at once through the held folder; false when it must be done the asynchronous way. */
  private now(path: string, act: (where: string) => NowOutcome): boolean {
    let done;
    try {
      done = this.held.atSync(path, act, { create: false });
    } catch {
      return false; // the asynchronous form does it again, and says what went wrong
    }
    if (done === "async") return false;
    if (done === OUTSIDE) this.refused.push(path);
    else this.touchedDirs.add(parentOf(path));
    return true;
  }
}

/**
 * The temp names a restore writes before renaming into place, in the same held folder as the file. Never the
 * user's name lengthened (a name of 233-255 bytes would pass NAME_MAX), never a name fixed per file (a user's
 * file may be called that): `.agent-tape-<tag>-<n>`, at most 40 bytes, where the tag is drawn from the
 * operation (so a run that recovery repeats makes the same names and clears what a crashed run left, instead
 * of leaving litter in the user's workspace) and n is the record's place in the operation's list.
 */
class TempNames {
  private readonly tag: string;
  private readonly places = new Map<FileSnapshot, number>();

  constructor(records: readonly FileSnapshot[], operation: string | undefined) {
    const seed = operation ?? randomUUID();
    this.tag = createHash("sha256").update(seed).digest("hex").slice(0, 16);
    for (const [place, record] of records.entries()) this.places.set(record, place);
  }

  of(record: FileSnapshot, where: string): string {
    return `${where.slice(0, where.lastIndexOf("/"))}/${tempName(this.tag, this.places.get(record)!)}`;
  }
}

/** The temp name of the `place`-th record of `operation` (see {@link ApplyOptions.operation}). */
export function restoreTempName(operation: string, place: number): string {
  return tempName(createHash("sha256").update(operation).digest("hex").slice(0, 16), place);
}

function tempName(tag: string, place: number): string {
  return `.agent-tape-${tag}-${place.toString(36)}`;
}

/** The OS error of one path, its message naming that path as the workspace has it (its code kept). */
function naming(path: string, error: unknown): unknown {
  if (!(error instanceof Error) || isAgentTapeError(error) || (error as NodeJS.ErrnoException).code === undefined)
    return error;
  const named = new Error(`${path}: ${error.message}`, { cause: error });
  return Object.assign(named, { code: (error as NodeJS.ErrnoException).code });
}
