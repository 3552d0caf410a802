import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { SYNC_FILESYSTEM_FROM } from "../src/core/sync-filesystem.js";

/**
 * {@link durableRewindFloorFiles} for one file, `bytes` its before-bytes: what the shell suite's 1-file rewind
 * sits on. Returns the milliseconds the floor's own steps took (the pack it reads is written first, untimed).
 */
export async function durableRewindFloor(records: string, file: string, bytes: string): Promise<number> {
  const pack = storeFloorPack(records, [Buffer.from(bytes)]);
  return durableRewindFloorFiles(records, dirname(file), [basename(file)], pack);
}

/** The before-bytes of a floor's files, stored untimed as one pack in `records`: read back in the timed part. */
export function storeFloorPack(records: string, before: readonly Buffer[]): string {
  mkdirSync(records, { recursive: true });
  const pack = join(records, "before.pack");
  const lengths = Buffer.alloc(4 * before.length);
  for (const [i, bytes] of before.entries()) lengths.writeUInt32LE(bytes.length, 4 * i);
  writeFileSync(pack, Buffer.concat([lengths, ...before]));
  return pack;
}

/**
 * What a crash-safe, undoable rewind of `paths` must do at the least, done raw with synchronous calls
 * (docs/ARCHITECTURE.md, "Rewind intent"), for the k-file rows of the rewind suite:
 * - the undo copy: each file's current bytes read and hashed (sha256), written with the intent (inline for
 *   fewer than 16 files, as ours carries small ones; else appended to one pack, fsynced);
 * - the intent: a temp file fsynced, renamed, its folder fsynced;
 * - the before-bytes: one read of the pack `storeFloorPack` made, each file's bytes checked against a sha256;
 * - each file: a temp written and renamed over it;
 * - durable: fsync of each file and folder under 16 files, else one syncfs (`sync -f`), as ours;
 * - the marker: one line through an O_DSYNC descriptor; the intent deleted.
 * No plan, no confinement, no conflict check, no log read, no compression. Returns the milliseconds it took.
 */
export function durableRewindFloorFiles(records: string, root: string, paths: readonly string[], pack: string): number {
  return durableRewindFloorPaths(records, root, { restore: paths, remove: [] }, pack);
}

/**
 * {@link durableRewindFloorFiles} for a rewind that also deletes: `restore` gets the pack's bytes (its folder
 * made where it is missing), `remove` is deleted (its emptied folders left). A path missing now has no undo copy.
 * For the session suite's rewind of a shell session (moves, `rm -rf`, generated files).
 */
export function durableRewindFloorPaths(
  records: string,
  root: string,
  { restore, remove }: { restore: readonly string[]; remove: readonly string[] },
  pack: string,
): number {
  const started = performance.now();
  const paths = [...restore, ...remove];
  const many = paths.length >= SYNC_FILESYSTEM_FROM;
  const undo: Buffer[] = [];
  const hashes: string[] = [];
  for (const path of paths) {
    const bytes = readIfThere(join(root, path));
    hashes.push(bytes ? createHash("sha256").update(bytes).digest("hex") : "absent");
    if (bytes) undo.push(bytes);
  }
  if (many) writeSynced(join(records, "undo.pack"), Buffer.concat(undo));
  const inline = many ? [] : undo.map((bytes) => bytes.toString("base64"));
  const intent = join(records, "intent.json");
  writeSynced(join(records, ".tmp-intent.json"), Buffer.from(JSON.stringify({ paths, hashes, inline })), "wx");
  renameSync(join(records, ".tmp-intent.json"), intent);
  fsyncNow(records);
  const stored = readFileSync(pack);
  let at = 4 * restore.length;
  restore.forEach((path, i) => {
    const bytes = stored.subarray(at, at + stored.readUInt32LE(4 * i));
    at += bytes.length;
    createHash("sha256").update(bytes).digest("hex"); // checked as ours checks a blob before using it
    const file = join(root, path);
    const temp = join(dirname(file), ".tmp-floor");
    try {
      writeFileSync(temp, bytes, { flag: "wx" });
    } catch {
      mkdirSync(dirname(file), { recursive: true }); // its folder went with the command that removed it
      writeFileSync(temp, bytes, { flag: "wx" });
    }
    renameSync(temp, file);
  });
  for (const path of remove) unlinkSync(join(root, path));
  if (many) execFileSync("sync", ["-f", "--", root]);
  else for (const path of new Set([...restore, ...paths.map(dirname)].map((path) => join(root, path)))) fsyncNow(path);
  const log = openSync(join(records, "log"), "a");
  closeSync(log);
  const marker = openSync(join(records, "log"), constants.O_WRONLY | constants.O_APPEND | constants.O_DSYNC);
  writeSync(marker, `${"m".repeat(600)}\n`);
  closeSync(marker);
  unlinkSync(intent);
  return performance.now() - started;
}

function readIfThere(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

function writeSynced(path: string, bytes: Buffer, flag = "w"): void {
  const fd = openSync(path, flag, 0o600);
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function fsyncNow(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
