import { lstat, mkdir, open, rename, rm, symlink, chmod } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fsyncDir } from "../core/atomic-file.js";
import type { FileSnapshot } from "../core/events.js";
import { forEachLimited } from "../core/bounded-concurrency.js";
import { confine } from "../checkpoint/confine.js";

export interface ApplyResult {
  /** Paths that turned out to lead outside the workspace at the last moment, and were left alone. */
  refused: string[];
}

/**
 * Makes each path what its record says: a file with the blob's bytes and mode, a symlink, a
 * folder, or nothing. Restores run parents first, deletions deepest first, so a folder that must
 * go takes with it whatever a restore put inside it. Files are written temp + fsync + rename, so
 * a crash leaves each file old or new, never torn; every step is idempotent (recovery re-runs it).
 * Each path is confined again right before it is touched, so a symlink swapped in after the plan
 * still cannot lead a write or a delete outside.
 */
export async function applyFileRecords(
  realWorkspace: string,
  records: readonly FileSnapshot[],
  blobBytes: (hash: string) => Promise<Buffer>,
  concurrency = 8,
): Promise<ApplyResult> {
  const refused: string[] = [];
  const depth = (p: string) => (p === "." ? 0 : p.split("/").length);
  const restores = records
    .filter((r) => r.kind !== "absent" && r.kind !== "skipped")
    .sort((a, b) => depth(a.path) - depth(b.path));
  const deletes = records.filter((r) => r.kind === "absent").sort((a, b) => depth(b.path) - depth(a.path));
  const touchedDirs = new Set<string>();

  const place = async (path: string): Promise<string | undefined> => {
    const where = await confine(realWorkspace, path);
    if (!where.inside) {
      refused.push(path);
      return undefined;
    }
    return where.absolute;
  };

  // Folders one depth at a time (a parent before its children), files in parallel.
  const folders = restores.filter((r) => r.kind === "directory");
  for (const record of folders) {
    const absolute = await place(record.path);
    if (absolute && record.kind === "directory") await restoreDirectory(absolute, record.mode);
  }
  await forEachLimited(
    restores.filter((r) => r.kind !== "directory"),
    concurrency,
    async (record) => {
      const absolute = await place(record.path);
      if (!absolute || absolute === realWorkspace) return; // the workspace itself stays a folder
      if (record.kind === "blob") await restoreFile(absolute, await blobBytes(record.blob), record.mode);
      else if (record.kind === "symlink") await restoreSymlink(absolute, record.target);
      touchedDirs.add(dirname(absolute));
    },
  );
  for (const record of deletes) {
    const absolute = await place(record.path);
    if (!absolute || absolute === realWorkspace) continue; // never delete the workspace itself
    await rm(absolute, { recursive: true, force: true }); // removes a link itself, never what it points at
    touchedDirs.add(dirname(absolute));
  }
  // Make the renames and unlinks durable before the log says the rewind happened.
  await Promise.all([...touchedDirs].map((dir) => fsyncDir(dir).catch(() => undefined)));
  return { refused };
}

async function clearFor(absolute: string, keepDirectory: boolean): Promise<void> {
  try {
    const info = await lstat(absolute);
    if (info.isDirectory() && !keepDirectory) await rm(absolute, { recursive: true, force: true });
    if (!info.isDirectory() && keepDirectory) await rm(absolute, { force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}

async function restoreFile(absolute: string, bytes: Buffer, mode: number): Promise<void> {
  await mkdir(dirname(absolute), { recursive: true });
  await clearFor(absolute, false); // a folder where the file must be: rename cannot replace it
  const temp = await freshTempFor(absolute);
  const fh = await open(temp, "wx", 0o600);
  try {
    try {
      await fh.writeFile(bytes);
      await fh.chmod(mode); // after writing, and explicitly: open()'s mode is cut by the umask
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(temp, absolute); // replaces a symlink itself, never writes through it
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

async function restoreSymlink(absolute: string, target: string): Promise<void> {
  await mkdir(dirname(absolute), { recursive: true });
  await clearFor(absolute, false);
  const temp = await freshTempFor(absolute);
  await symlink(target, temp);
  try {
    await rename(temp, absolute);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/**
 * The temp name a restore writes before renaming into place: fixed per file, not random, so what
 * a crash mid-restore leaves behind is cleared by the recovery's restore of the same path instead
 * of staying as litter in the user's workspace.
 */
async function freshTempFor(absolute: string): Promise<string> {
  const temp = join(dirname(absolute), `.tmp-${basename(absolute)}-agent-tape-rewind`);
  await rm(temp, { force: true }); // a link there is removed, never followed
  return temp;
}

async function restoreDirectory(absolute: string, mode: number): Promise<void> {
  await clearFor(absolute, true);
  await mkdir(absolute, { recursive: true });
  await chmod(absolute, mode);
}
