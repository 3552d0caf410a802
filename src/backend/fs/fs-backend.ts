import { randomBytes } from "node:crypto";
import { lstat, readdir, rename, rm, stat } from "node:fs/promises";
import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { SessionNotFoundError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import type {
  CreateSessionOptions,
  LockOptions,
  LockedSession,
  NewSessionEvents,
  ReadEventsOptions,
  SessionRecord,
  SignalOption,
  BlobReadOptions,
  BlobDigest,
  StorageBackend,
  StorageUsage,
} from "../types.js";
import { withTypedStorageErrors } from "../typed-storage-errors.js";
import { isRecordName } from "../names.js";
import { digestBlobFile, listBlobFiles, readBlobFile, storedBlobFileBytes } from "./blobs.js";
import { listPacked, packFileCount } from "./blob-pack.js";
import { createSessionFolder } from "./create-session.js";
import { folderUsage } from "./folder-usage.js";
import { SessionLayout } from "./layout.js";
import { acquireFileLock, othersWaiting } from "./lock.js";
import { moveLogToNewInode } from "./move-log.js";
import { FsLockedSession } from "./locked-session.js";
import { readLastEvent, readLogBatches } from "./read-log.js";
import { closeSegmentReaders } from "./pack-readers.js";
import { checkStoreFolder, checkStoreFolderSync, openStoreFile, READ, readSmallStoreFile } from "./store-files.js";
import { parseSessionRecord, parseStoreJson } from "./store-json.js";
import { readArchivedLogFile } from "./archive-log.js";

export interface FsBackendOptions {
  /** Folder that holds one sub-folder per session. Created on first use. */
  root: string;
  /**
   * A lock whose holder stopped refreshing it for this long (a crashed or frozen process) is
   * taken over. Lower means faster recovery after a crash, but a process whose event loop is
   * blocked longer than this loses its lock (LOCK_COMPROMISED). Minimum 2000.
   * @default 5000
   */
  lockStaleMs?: number;
  /**
   * Write blobs compressed (deflate-raw) when that saves at least a tenth; incompressible content
   * stays raw. Costs CPU on capture and saves most of the bytes of source code (the codec and its
   * figures: bench/compression-choice.mjs; docs/ARCHITECTURE.md, "Blobs"). Blobs are read either way.
   * @default true
   */
  compressBlobs?: boolean;
  /**
   * Blobs stored in fewer bytes than this go into the session's pack, `blobs/pack/` (4096 is the size it was made
   * for); 0: each one a file of its own, as before packs. Most of a source tree's files are a few hundred bytes once
   * compressed: as files, each would take a 4 KiB block and a capture would wait for two fsyncs instead of one
   * fdatasync (docs/format.md, "Blob packs"; docs/ARCHITECTURE.md, "Blobs").
   * @default 4096
   */
  packBlobsUnder?: number;
}

/** Under this many stored bytes a blob is packed when `packBlobsUnder` is not set. */
const PACK_BLOBS_UNDER = 4096;

export const DEFAULT_LOCK_STALE_MS = 5000;

/**
 * The default backend: one folder per session holding `events.jsonl`, `session.json`,
 * `blobs/ab/abcdef…` and `records/`. Several processes may share a root; the session lock is a
 * proper-lockfile lock folder beside the log.
 */
export function fsBackend(options: FsBackendOptions): StorageBackend {
  return withTypedStorageErrors(new FsBackend(options));
}

class FsBackend implements StorageBackend {
  readonly name = "fs";
  private readonly layout: SessionLayout;
  private readonly staleMs: number;
  private readonly openLocks = new Set<LockedSession>();

  get localFolder(): string {
    return this.layout.root;
  }

  constructor(options: FsBackendOptions) {
    this.layout = new SessionLayout(
      resolve(options.root),
      options.compressBlobs ?? true,
      options.packBlobsUnder ?? PACK_BLOBS_UNDER,
    );
    this.staleMs = Math.max(2000, options.lockStaleMs ?? DEFAULT_LOCK_STALE_MS);
  }

  async createSession(
    record: SessionRecord,
    events: NewSessionEvents = [],
    options: CreateSessionOptions = {},
  ): Promise<void> {
    await createSessionFolder(this.layout, record, events, options);
  }

  async getSession(id: string, options: SignalOption = {}): Promise<SessionRecord | undefined> {
    const meta = this.layout.meta(id);
    options.signal?.throwIfAborted();
    let text: string;
    try {
      text = (await readSmallStoreFile(id, meta)).toString("utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      // session.json is derived: if it is gone but the log is there, the session still is.
      try {
        const info = await lstat(this.layout.log(id));
        if (!info.isFile()) return undefined;
        return { id, createdAt: info.birthtime.toISOString() };
      } catch {
        return undefined;
      }
    }
    return parseSessionRecord(id, meta, text);
  }

  async listSessionIds(options: SignalOption = {}): Promise<string[]> {
    options.signal?.throwIfAborted();
    let entries;
    try {
      entries = await readdir(this.layout.root, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    return entries.filter((e) => e.isDirectory() && !e.name.startsWith(".")).map((e) => e.name);
  }

  async deleteSession(id: string, options: SignalOption = {}): Promise<boolean> {
    const dir = this.layout.dir(id);
    options.signal?.throwIfAborted();
    // Rename first so the session disappears at once, then remove at leisure.
    const trash = join(this.layout.root, `.deleted-${id}-${randomBytes(8).toString("hex")}`);
    try {
      await rename(dir, trash);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw error;
    }
    closeSegmentReaders(this.layout.packs(id)); // its pack's space freed now, not once a kept reader closes
    await rm(trash, { recursive: true, force: true });
    return true;
  }

  async lastEvent(id: string, options: SignalOption = {}): Promise<StoredEvent | undefined> {
    const file = this.layout.log(id);
    options.signal?.throwIfAborted();
    let fh;
    try {
      fh = await openStoreFile(id, file, READ);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new SessionNotFoundError(id);
      throw error;
    }
    try {
      return await readLastEvent(file, fh, this.layout.cuts(id));
    } finally {
      await fh.close();
    }
  }

  async *readEvents(id: string, options: ReadEventsOptions = {}): AsyncGenerator<StoredEvent> {
    for await (const batch of this.readEventBatches(id, options)) yield* batch;
  }

  /** The log one chunk's worth of events at a time: one await per 64 KB, not per event. */
  async *readEventBatches(id: string, options: ReadEventsOptions = {}): AsyncGenerator<StoredEvent[]> {
    yield* readLogBatches(await this.existingLog(id), this.layout.cuts(id), options);
  }

  async readBlob(id: string, hash: string, options: BlobReadOptions = {}): Promise<Buffer | undefined> {
    options.signal?.throwIfAborted();
    return readBlobFile(this.layout, id, hash, options.maxBytes);
  }

  async digestBlob(id: string, hash: string, options: BlobReadOptions = {}): Promise<BlobDigest | undefined> {
    options.signal?.throwIfAborted();
    return digestBlobFile(this.layout, id, hash, options.maxBytes);
  }

  async storedBlobBytes(id: string, hash: string, options: SignalOption = {}): Promise<number | undefined> {
    options.signal?.throwIfAborted();
    return storedBlobFileBytes(this.layout, id, hash);
  }

  async listBlobs(id: string, options: SignalOption = {}): Promise<string[]> {
    options.signal?.throwIfAborted();
    return listBlobFiles(this.layout, id);
  }

  async readRecord(id: string, name: string, options: SignalOption = {}): Promise<unknown> {
    const records = this.layout.records(id);
    options.signal?.throwIfAborted();
    if (!isRecordName(name)) return undefined;
    try {
      checkStoreFolderSync(id, records);
      const path = this.layout.record(id, name);
      return parseStoreJson(id, path, (await readSmallStoreFile(id, path)).toString("utf8"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  async *readArchivedLog(id: string, name: string, options: SignalOption = {}): AsyncIterable<Buffer> {
    const records = this.layout.records(id);
    options.signal?.throwIfAborted();
    if (!isRecordName(name)) return;
    await checkStoreFolder(id, records);
    yield* readArchivedLogFile(this.layout.archivedLog(id, name), options.signal);
  }

  async listRecords(id: string, options: SignalOption = {}): Promise<string[]> {
    const records = this.layout.records(id);
    options.signal?.throwIfAborted();
    try {
      // At once: one folder's names, where two round trips through the pool cost more than the calls.
      checkStoreFolderSync(id, records);
      const names = readdirSync(records);
      return names.filter((n) => n.endsWith(".json") && !n.startsWith(".")).map((n) => n.slice(0, -5));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
  }

  async sizeOf(id: string, options: SignalOption = {}): Promise<number> {
    const dir = this.layout.dir(id);
    options.signal?.throwIfAborted();
    return (await folderUsage(dir)).bytes;
  }

  async usage(id: string, options: SignalOption = {}): Promise<StorageUsage> {
    const dir = this.layout.dir(id);
    options.signal?.throwIfAborted();
    const log = await this.existingLog(id);
    const [logBytes, blobs, records, total] = await Promise.all([
      stat(log).then((info) => info.size),
      folderUsage(this.layout.blobs(id)),
      folderUsage(this.layout.records(id)),
      folderUsage(dir),
    ]);
    return {
      log: logBytes,
      blobs: blobs.bytes,
      blobCount: blobs.files - packFileCount(this.layout, id) + listPacked(this.layout, id).length,
      records: records.bytes,
      other: total.bytes - logBytes - blobs.bytes - records.bytes,
      total: total.bytes,
    };
  }

  async lock(id: string, options: LockOptions = {}): Promise<LockedSession> {
    const file = await this.existingLog(id);
    let session: FsLockedSession | undefined;
    let lostEarly: Error | undefined;
    const lock = await acquireFileLock(id, file, {
      staleMs: this.staleMs,
      waitMs: options.waitMs ?? this.staleMs * 3,
      onWait: options.onWait,
      signal: options.signal,
      // proper-lockfile reports a lost lock from a timer; its default throws, crashing the process.
      onCompromised: (error) => {
        if (session) session.markCompromised(error);
        else lostEarly = error;
      },
    }).catch((error: unknown) => {
      // The session was deleted while we waited: its folder, where the lock goes, is gone.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new SessionNotFoundError(id);
      throw error;
    });
    try {
      // The holder whose lock we took as stale may be alive and still hold the log open.
      if (lock.tookOver) await moveLogToNewInode(id, file);
      session = await FsLockedSession.open(
        id,
        this.layout,
        lock,
        () => this.openLocks.delete(session!),
        () => othersWaiting(file, this.staleMs),
      );
      // Temp files a failed or killed rewrite left: no one else can be writing one now. Litter, so best-effort.
      await session.sweepWhenTaken().catch(() => undefined);
    } catch (error) {
      await lock.release().catch(() => undefined);
      throw error;
    }
    if (lostEarly) session.markCompromised(lostEarly);
    this.openLocks.add(session);
    return session;
  }

  /** The session's log path, or SESSION_NOT_FOUND when there is no such session. */
  private async existingLog(id: string): Promise<string> {
    const file = this.layout.log(id);
    // At once: a round trip through the pool cost more than the call (docs/ARCHITECTURE.md, "Batched file work").
    if (statSync(file, { throwIfNoEntry: false }) === undefined) throw new SessionNotFoundError(id);
    return file;
  }

  async close(): Promise<void> {
    const open = [...this.openLocks];
    this.openLocks.clear();
    await Promise.all(open.map((s) => s.release()));
    closeSegmentReaders(this.layout.root);
  }
}
