import { type FSWatcher, mkdtempSync, readFileSync, rmSync, watch, writeFileSync } from "node:fs";
import { nameFromBytes, osPath } from "../../core/byte-names.js";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

/**
 * What changed in the workspace since the last {@link FolderWatcher.settle}: the folders whose
 * entries may differ from the index (relist them, lstat what they hold), or a reason why only a
 * whole walk can tell.
 */
export type WatchedChanges = { folders: ReadonlySet<string> } | { walk: string };

/** How long a barrier may take to come back before the watcher is given up as broken. */
const BARRIER_TIMEOUT_MS = 2000;
/** The kernel's queue length when /proc does not say (Linux's default). */
const DEFAULT_MAX_QUEUED_EVENTS = 16384;

const live = new Set<FolderWatcher>();
/**
 * Events delivered to every watcher of this process: they all share libuv's one inotify descriptor, so
 * one kernel queue, and a burst in one workspace can drop the events of another.
 */
let delivered = 0;
let exitHooked = false;

interface Watched {
  handle: FSWatcher;
  ino: bigint;
  /** An event said the folder itself went away: the kernel drops a watch whose folder is removed. */
  dead: boolean;
}

/**
 * Tells which folders of a workspace changed, from inotify (through `fs.watch`, one watch per
 * tracked folder), so a scan can relist those folders and leave the rest alone
 * (docs/ARCHITECTURE.md, "Watched scans"). It never decides alone that nothing changed: every
 * doubt (a burst that may have overflowed the kernel's queue, a `.gitignore` changed, an error,
 * the workspace folder itself renamed) answers "walk everything".
 *
 * A watch is added before its folder is listed, so a name added after the listing raises an event.
 * Events are delivered in order through one inotify descriptor per event loop (libuv's), so a file
 * written to a folder of our own after the command, and seen back, proves every earlier event has
 * been delivered: that is {@link settle}'s barrier.
 */
export class FolderWatcher {
  private readonly watched = new Map<string, Watched>();
  private dirty = new Set<string>();
  /**
   * Folders with no live watch: the watch died (its folder renamed or removed, see {@link watch}) or could not
   * be added (the folder was gone by then, and may be back by the time it is listed). Named to every scan until
   * watched again or forgotten: a scan that finds such a folder gone for a moment must not leave it unwatched.
   */
  private readonly unwatched = new Set<string>();
  private walkReason: string | undefined = "the watcher has just started";
  /** {@link delivered} at the last two settles: the events of the last two rounds, all watchers' together. */
  private deliveredAt: [number, number] = [delivered, delivered];
  private broken: string | undefined;
  private ownFolder: string | undefined;
  private barrierHandle: FSWatcher | undefined;
  private barrierSeen: (() => void) | undefined;
  private barriers = 0;

  /**
   * @param burst events within two settles past which the kernel's queue may have overflowed
   * (libuv drops the overflow notice itself): half the queue's length by default.
   */
  constructor(
    readonly workspace: string,
    private readonly burst = Math.floor(maxQueuedEvents() / 2),
  ) {
    try {
      this.ownFolder = mkdtempSync(join(tmpdir(), "agent-tape-watch-"));
      this.barrierHandle = watch(this.ownFolder, { persistent: false }, (_type, name) => {
        delivered++;
        if (name === `barrier-${this.barriers}`) this.barrierSeen?.();
      });
      this.barrierHandle.on("error", (error) => this.breakDown(`the barrier watch failed (${error.message})`));
    } catch (error) {
      // No temp folder to write in, or no watch to be had: every scan walks, as without `watch`.
      this.breakDown(`the watcher could not start (${(error as Error).message})`);
    }
    live.add(this);
    if (live.size === 1 && !exitHooked) {
      exitHooked = true;
      // The barrier folders are ours, in the system's temp folder: none is left behind by a process that never closed.
      process.once("exit", () => {
        for (const watcher of live) watcher.close();
      });
    }
  }

  /** Folders watched now (workspace-relative; "" is the workspace). */
  get size(): number {
    return this.watched.size;
  }

  /** The folder of our own the barriers are written in (the system's temp folder may lie in the workspace). */
  get barrierFolder(): string | undefined {
    return this.ownFolder;
  }

  /** Why the watcher no longer watches, if it gave up. */
  get failure(): string | undefined {
    return this.broken;
  }

  /**
   * Watches `folder` (workspace-relative), whose inode is `ino`, before it is listed. A folder
   * watched under another inode, or whose watch died with the folder it watched (removed, then made
   * again under the same name, possibly with the same inode number), is watched afresh. Returns true
   * when the watch is new: the folder must then be listed, not taken from a listing held over.
   */
  watch(folder: string, ino: bigint): boolean {
    if (this.broken !== undefined) return false;
    const known = this.watched.get(folder);
    if (known !== undefined && known.ino === ino && !known.dead) return false;
    known?.handle.close();
    this.watched.delete(folder);
    try {
      const absolute = folder === "" ? this.workspace : join(this.workspace, folder);
      const name = basename(absolute);
      const watched: Watched = { handle: undefined as unknown as FSWatcher, ino, dead: false };
      watched.handle = watch(osPath(absolute), { persistent: false, encoding: "buffer" }, (type, bytes) => {
        const changed = bytes === null ? null : nameFromBytes(bytes); // a name that is not UTF-8 compares exactly
        delivered++;
        this.dirty.add(folder);
        if (changed === ".gitignore") this.walkReason ??= "a .gitignore changed";
        if (type !== "rename") return;
        // The folder itself may have been removed, and its watch died with it: libuv names such an
        // event after the path the inotify watch was first added under, which is another name once the
        // folder was renamed (or another watcher added it), so the name cannot tell. Any "rename" may
        // be one: the folder is watched afresh when next listed (docs/ARCHITECTURE.md, "Watched scans").
        watched.dead = true;
        this.unwatched.add(folder);
        // Named by its own name, it was renamed or removed, which its parent's listing shows.
        if (changed === name && folder !== "") this.dirty.add(parentOf(folder));
      });
      watched.handle.on("error", (error) => this.breakDown(`a folder watch failed (${error.message})`));
      this.watched.set(folder, watched);
      this.unwatched.delete(folder);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // Gone (or a folder no more) since its parent listed it: that change raised an event on the parent,
      // whose next listing shows it. It may also be back by the time it is listed (renamed away and back), with
      // nothing watching it: every scan lists it until it is watched. Anything else (the system's watch limit,
      // say) ends the watching.
      if (code === "ENOENT" || code === "ENOTDIR") {
        this.unwatched.add(folder);
        return true;
      }
      this.breakDown(`a folder could not be watched (${(error as Error).message})`);
      return false;
    }
  }

  /** Stops watching folders that are no longer tracked. */
  forget(folders: Iterable<string>): void {
    for (const folder of folders) {
      this.unwatched.delete(folder);
      const known = this.watched.get(folder);
      if (known === undefined) continue;
      known.handle.close();
      this.watched.delete(folder);
    }
  }

  /**
   * Waits until every event raised before this call has been delivered, then hands over what
   * changed since the last settle and starts a new round. Must not run twice at once.
   */
  async settle(): Promise<WatchedChanges> {
    if (this.broken === undefined) await this.barrier();
    const folders = this.dirty;
    for (const folder of this.unwatched) folders.add(folder);
    // Every watcher's events count: the queue is shared (see `delivered`).
    const events = delivered - this.deliveredAt[0];
    const reason =
      this.broken ??
      this.walkReason ??
      (events >= this.burst ? `${events} events in a burst: the kernel's queue may have overflowed` : undefined);
    this.dirty = new Set();
    this.walkReason = undefined;
    this.deliveredAt = [this.deliveredAt[1], delivered];
    return reason === undefined ? { folders } : { walk: reason };
  }

  /** Makes the next settle answer "walk everything" (its scan failed: the round's changes are not in the index). */
  distrust(reason: string): void {
    this.walkReason ??= reason;
  }

  close(): void {
    live.delete(this);
    for (const { handle } of this.watched.values()) handle.close();
    this.watched.clear();
    this.barrierHandle?.close();
    if (this.ownFolder !== undefined) rmSync(this.ownFolder, { recursive: true, force: true });
    this.broken ??= "closed";
  }

  // Each barrier is a new file: a late event of the previous one (its write raises several) must
  // not pass for this one's.
  private async barrier(): Promise<void> {
    // Turns of the event loop first, until one delivers nothing more: their polls read what the kernel queued. A
    // command that raised more events than the queue holds leaves it full, and a barrier written then is dropped with
    // the rest (this waited out BARRIER_TIMEOUT_MS and broke down). Once most steps of a capture were synchronous,
    // nothing else gave the loop those turns: the first setImmediate can come before the next poll, so two a round
    // (test/checkpoint/workspace-index/watched-overflow.process.test.ts).
    for (let turns = 0, before = -1; turns < 10 && before !== delivered; turns++) {
      before = delivered;
      await new Promise<void>((resolve) => setImmediate(resolve));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const folder = this.ownFolder!;
    const previous = join(folder, `barrier-${this.barriers}`);
    const name = `barrier-${++this.barriers}`;
    let timer: NodeJS.Timeout | undefined;
    const seen = new Promise<boolean>((resolve) => {
      this.barrierSeen = () => resolve(true);
      // Also keeps the event loop alive: the watches themselves do not (they are not persistent).
      timer = setTimeout(() => resolve(false), BARRIER_TIMEOUT_MS);
    });
    try {
      rmSync(previous, { force: true });
      writeFileSync(join(folder, name), "", { flag: "wx" });
    } catch (error) {
      this.barrierSeen = undefined;
      clearTimeout(timer);
      this.breakDown(`the barrier could not be written (${(error as Error).message})`);
      return;
    }
    const arrived = await seen;
    clearTimeout(timer);
    this.barrierSeen = undefined;
    if (!arrived) this.breakDown(`no event came back within ${BARRIER_TIMEOUT_MS} ms`);
  }

  private breakDown(reason: string): void {
    if (this.broken !== undefined) return;
    this.broken = reason;
    for (const { handle } of this.watched.values()) handle.close();
    this.watched.clear();
  }
}

function parentOf(folder: string): string {
  const slash = folder.lastIndexOf("/");
  return slash === -1 ? "" : folder.slice(0, slash);
}

function maxQueuedEvents(): number {
  try {
    const value = Number.parseInt(readFileSync("/proc/sys/fs/inotify/max_queued_events", "utf8"), 10);
    return Number.isFinite(value) && value > 0 ? value : DEFAULT_MAX_QUEUED_EVENTS;
  } catch {
    return DEFAULT_MAX_QUEUED_EVENTS;
  }
}
