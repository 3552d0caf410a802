// A new session folder: built in a hidden staging folder (log, session.json, a fork's blobs), then renamed into
// place, so a crash or a concurrent reader never sees a session without its log, metadata or blobs.
import { copyFile, link, mkdir, mkdtemp, open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { fsyncDir } from "../../core/atomic-file.js";
import { forEachLimited } from "../../core/bounded-concurrency.js";
import { serializeEvent } from "../../core/envelope.js";
import { SessionExistsError } from "../../core/errors.js";
import { isBlobHash } from "../names.js";
import type { CreateSessionOptions, NewSessionEvents, SessionRecord } from "../types.js";
import { copyPackedInto } from "./blob-pack.js";
import { copyDictionariesInto } from "./pack-dictionary.js";
import type { SessionLayout } from "./layout.js";

/** Blob links (or copies) in flight at once during a fork. */
const LINK_CONCURRENCY = 8;
/**
 * A new log is written in pieces of about this many characters, the size reads use: larger pieces
 * made fewer writes but left more garbage between collections, and were no faster (the peak with
 * these: bench "fork: 1,000,000 events, peak memory growth").
 */
const LOG_WRITE_CHUNK = 1 << 16;

/** Makes the session's folder with its events, or SESSION_EXISTS (nothing left behind either way on failure). */
export async function createSessionFolder(
  layout: SessionLayout,
  record: SessionRecord,
  events: NewSessionEvents,
  options: CreateSessionOptions,
): Promise<void> {
  const dir = layout.dir(record.id);
  options.signal?.throwIfAborted();
  await mkdir(layout.root, { recursive: true });
  // mkdtemp: a unique name even for two creates of one id in the same millisecond.
  const staging = await mkdtemp(join(layout.root, `.staging-${record.id}-`));
  try {
    await writeLogSynced(join(staging, "events.jsonl"), events, options.signal);
    await writeFileSynced(join(staging, "session.json"), JSON.stringify(record, null, 2) + "\n");
    if (options.blobsFrom) await linkBlobs(layout, options.blobsFrom.sessionId, staging, options.blobsFrom.hashes);
    await fsyncDir(staging);
    try {
      await rename(staging, dir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOTEMPTY" || code === "EEXIST") throw new SessionExistsError(record.id);
      throw error;
    }
    await fsyncDir(layout.root);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Hard-links blobs (copies where the filesystem refuses links) into a staging session folder, a
 * few at a time: a fork of a long session may carry thousands, and one at a time waits out each
 * round trip.
 */
async function linkBlobs(
  layout: SessionLayout,
  fromId: string,
  stagingDir: string,
  hashes: Iterable<string>,
): Promise<void> {
  layout.dir(fromId); // the id is checked where it becomes a place, before anything is linked
  const all = [...hashes].filter(isBlobHash);
  const packed = copyPackedInto(layout, fromId, join(stagingDir, "blobs"), all);
  if (packed.size > 0) copyDictionariesInto(layout, fromId, join(stagingDir, "blobs")); // what its entries may name
  const wanted = all.filter((hash) => !packed.has(hash));
  const shards = [...new Set(wanted.map((hash) => hash.slice(0, 2)))];
  await forEachLimited(shards, LINK_CONCURRENCY, (shard) =>
    mkdir(join(stagingDir, "blobs", shard), { recursive: true }).then(() => undefined),
  );
  await forEachLimited(wanted, LINK_CONCURRENCY, async (hash) => {
    const from = layout.blob(fromId, hash);
    const to = join(stagingDir, "blobs", hash.slice(0, 2), hash);
    try {
      await link(from, to);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return; // never written or pruned: the checkpoint's reader reports it
      if (code === "EEXIST") return;
      await copyFile(from, to);
    }
  });
}

/** Writes a new log from its events as they come, then syncs it. */
async function writeLogSynced(file: string, events: NewSessionEvents, signal?: AbortSignal): Promise<void> {
  const fh = await open(file, "wx", 0o644);
  try {
    let pending: string[] = [];
    let pendingLength = 0;
    for await (const event of events) {
      const line = serializeEvent(event) + "\n";
      pending.push(line);
      pendingLength += line.length;
      if (pendingLength >= LOG_WRITE_CHUNK) {
        signal?.throwIfAborted();
        await fh.writeFile(pending.join(""));
        pending = [];
        pendingLength = 0;
      }
    }
    if (pending.length > 0) await fh.writeFile(pending.join(""));
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeFileSynced(file: string, data: string): Promise<void> {
  const fh = await open(file, "wx", 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}
